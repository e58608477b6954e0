"""Exact unit tests of the simplifier's rules (the ones split, fuse and tiling rely on)."""

import math

import pytest

from mlc.tir import Analyzer, IntImm, Max, Min, Range, Select, SizeVar, Var, const, simplify
from mlc.tir.arith import eval_region
from mlc.tir.printer import expr_to_str

i, j, k, x = Var("i"), Var("j"), Var("k"), Var("x")


def r(n):
    return Range(const(0), const(n))


@pytest.fixture
def ana():
    a = Analyzer()
    a.bind(i, r(32))
    a.bind(j, r(32))
    return a


def s(a, e):
    return expr_to_str(a.simplify(e))


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda: (i * 32 + j) // 32, "i"),
        (lambda: (i * 32 + j) % 32, "j"),
        (lambda: (i * 32 + j) // 32 * 32 + (i * 32 + j) % 32, "i * 32 + j"),
        (lambda: (i * 32 + j) // 8, "i * 4 + j // 8"),
        (lambda: j // 32, "0"),
        (lambda: j % 32, "j"),
        (lambda: (j % 8) // 8, "0"),
        (lambda: (j + 32) // 32, "1"),
        (lambda: (j + 32) % 32, "j"),
        (lambda: (i * 32 + 31 - j) // 32, "i"),
        (lambda: (i * 32 - j - 1) // 32, "i - 1"),
    ],
)
def test_split_fuse_rules_with_bounds(ana, make, expected):
    assert s(ana, make()) == expected


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda: x // 1, "x"),
        (lambda: x % 1, "0"),
        (lambda: x // 4 * 4 + x % 4, "x"),
        (lambda: (x // 4 * 4 + x % 4) * 2, "x * 2"),
        (lambda: x // 4 // 8, "x // 32"),
        (lambda: x * 8 // 4, "x * 2"),
        (lambda: x * 4 // 8, "x // 2"),
        (lambda: x % 64 % 32, "x % 32"),
        (lambda: x * 4 % 8, "x % 2 * 4"),
        (lambda: (x * 32 + 5) // 32, "x"),
        (lambda: (x * 32 + 40) % 32, "8"),
        (lambda: x + 3 - x, "3"),
        (lambda: (x + 1) * 4 - 4, "x * 4"),
        (lambda: x * 0 + 7, "7"),
        (lambda: 2 * x - 5 - 3 * x, "x * -1 - 5"),
        (lambda: 10 - x + x * 2, "x + 10"),
        (lambda: const(7) // 2 + const(-7) // 2 + const(-7) % 2, "0"),
    ],
)
def test_rules_without_bounds(make, expected):
    assert expr_to_str(simplify(make())) == expected


def test_regrouping_rules():
    y, a, b = Var("y"), Var("a"), Var("b")
    dom = {y: r(4), a: r(8), b: r(16)}
    assert expr_to_str(simplify((x * 4 + y) // 8, dom)) == "x // 2"
    assert expr_to_str(simplify((x * 4 + y) % 8, dom)) == "x % 2 * 4 + y"
    assert expr_to_str(simplify((a * 16 + b) // 4 % 4, dom)) == "b // 4"
    assert expr_to_str(simplify((a * 16 + b) // 4 // 4, dom)) == "a"
    assert expr_to_str(simplify((a * 16 + b) % 32, dom)) == "a % 2 * 16 + b"
    # y + 1 may reach 4: no rewrite
    assert expr_to_str(simplify((x * 4 + y + 1) // 8, dom)) == "(x * 4 + y + 1) // 8"


def test_comparisons_fold_when_provable(ana):
    assert ana.can_prove(i * 32 + j < 1024)
    assert not ana.can_prove(i * 32 + j < 1000)
    assert s(ana, i * 32 + j < 1000) == "i * 32 + j < 1000"
    assert s(ana, i * 32 + j >= 1024) == "False"
    assert s(ana, i * 32 + j < i * 32 + 16) == "j < 16"
    assert ana.can_prove(i != 40)
    assert ana.can_prove_equal((i * 32 + j) // 32, i)
    assert not ana.can_prove_equal(i, j)


def test_min_max_select_and_logic(ana):
    assert s(ana, Min(i, j + 32)) == "i"
    assert s(ana, Max(i, j + 32)) == "j + 32"
    assert s(ana, Min(i, j)) == "min(i, j)"
    assert s(ana, Min(x, x)) == "x"
    assert s(ana, Select(i < 40, i, j)) == "i"
    assert s(ana, Select(x < 3, x, x)) == "x"
    assert s(ana, (i < 40) & (x < 3)) == "x < 3"
    assert s(ana, (i < 40) | (x < 3)) == "True"
    assert s(ana, ~(x < 3)) == "x >= 3"


def test_floats_fold_constants_only():
    a, b = Var("a", "float32"), Var("b", "float32")
    assert expr_to_str(simplify(const(1.5) + const(2.0))) == "3.5"
    assert expr_to_str(simplify(a + b - b)) == "a + b - b"  # never reassociated
    assert expr_to_str(simplify(a * (const(2.0) * const(3.0)))) == "a * 6.0"
    # float32 constants fold with float32 rounding
    folded = simplify(const(0.1) + const(0.2))
    assert folded.value == pytest.approx(0.3, rel=1e-7) and folded.dtype == "float32"


def test_casts_of_constants_fold():
    assert expr_to_str(simplify(const(3).astype("float32"))) == "3.0"
    assert expr_to_str(simplify(const(3.7).astype("int32"))) == "3"
    assert expr_to_str(simplify(const(3).astype("int64") + x.astype("int64"))) == (
        "int64(x) + int64(3)"
    )


def test_const_int_bound(ana):
    assert ana.const_int_bound(i * 32 + j) == (0, 1023)
    assert ana.const_int_bound((i * 32 + j) // 8) == (0, 127)
    assert ana.const_int_bound(j % 8) == (0, 7)
    assert ana.const_int_bound(0 - i) == (-31, 0)
    assert ana.const_int_bound(i * -4 + 3) == (-121, 3)
    assert ana.const_int_bound(Min(i, const(7))) == (0, 7)
    assert ana.const_int_bound(Max(i, const(7))) == (7, 31)
    assert ana.const_int_bound(SizeVar("n")) == (0, math.inf)


def test_bind_to_expression_substitutes():
    a = Analyzer()
    a.bind(x, i * 4 + 1)
    assert expr_to_str(a.simplify(x * 2 - i * 8)) == "2"


def test_constraint_scope():
    a = Analyzer()
    a.bind(i, r(100))
    assert not a.can_prove(i < 50)
    with a.constraint_scope(i < 40):
        assert a.can_prove(i < 50)
    assert not a.can_prove(i < 50)


def test_simplify_with_bounds_dict():
    assert expr_to_str(simplify((i * 8 + k) // 8, {k: r(8)})) == "i"
    assert isinstance(simplify(const(2) * 3), IntImm)


def test_vector_rules():
    from mlc.tir import Broadcast, Ramp

    e = Ramp(i * 8, const(1), 8) + Broadcast(const(3), 8)
    assert expr_to_str(simplify(e)) == "ramp(i * 8 + 3, 1, 8)"
    e = Ramp(i * 8, const(1), 8) // Broadcast(const(8), 8)
    assert expr_to_str(simplify(e)) == "broadcast(i, 8)"
    e = Ramp(i * 8, const(1), 8) % Broadcast(const(8), 8)
    assert expr_to_str(simplify(e)) == "ramp(0, 1, 8)"


def test_eval_region_affine_and_symbolic():
    i0, i1 = Var("i0"), Var("i1")
    n = SizeVar("n")
    regs = eval_region([i0 * 32 + i1, k], {i1: r(32), k: Range(const(0), n)})
    assert [(expr_to_str(q.min), expr_to_str(q.extent)) for q in regs] == [
        ("i0 * 32", "32"),
        ("0", "n"),
    ]
    regs = eval_region([i0 * 4 + i1 - 1], {i0: r(8), i1: r(4)})
    assert [(expr_to_str(q.min), expr_to_str(q.extent)) for q in regs] == [("-1", "32")]
    regs = eval_region([(i0 * 4 + i1) // 4], {i1: r(4)})
    assert [(expr_to_str(q.min), expr_to_str(q.extent)) for q in regs] == [("i0", "1")]
    regs = eval_region([0 - i0], {i0: r(8)})
    assert [(expr_to_str(q.min), expr_to_str(q.extent)) for q in regs] == [("-7", "8")]
    regs = eval_region([i0 // 3], {i0: r(8)})
    assert [(expr_to_str(q.min), expr_to_str(q.extent)) for q in regs] == [("0", "3")]


def test_eval_region_falls_back_to_shape():
    from mlc.tir import Buffer

    idx = Buffer("Idx", (const(10),), "int32")
    regs = eval_region([idx[i]], {i: r(10)}, shape=[const(100)])
    assert (expr_to_str(regs[0].min), expr_to_str(regs[0].extent)) == ("0", "100")


def test_equality_of_non_negative_sum_splits_into_terms():
    from mlc.tir import Range, Var, const
    from mlc.tir.arith import Analyzer

    k0, k1 = Var("k0"), Var("k1")
    ana = Analyzer()
    ana.bind(k0, Range(const(0), const(8)))
    ana.bind(k1, Range(const(0), const(4)))
    assert str(ana.simplify(k0 * 4 + k1 == 0)) == "k0 == 0 and k1 == 0"
    assert str(ana.simplify(k0 * 4 == 0)) == "k0 == 0"
    assert str(ana.simplify(k0 * 4 + k1 != 0)) == "k0 != 0 or k1 != 0"
    assert str(ana.simplify(k0 * 4 == 2)) == "False"
    assert str(ana.simplify(k0 - k1 == 0)) == "k0 - k1 == 0"  # mixed signs: left alone
