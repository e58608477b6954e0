"""Hostile tensor expressions: constants a dtype cannot hold, reduce axes given twice or
backwards, a tensor listed twice, Python operators and conversions on symbolic expressions,
numpy scalars, names with spaces. Each was found to wrap silently, raise an untyped
exception or crash later; each now computes what numpy computes or raises a typed error."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import IndexOutOfBoundsError, LoweringError, MLCTypeError, ScheduleError, TEError
from mlc.script import from_source
from mlc.tir.verify import verify_well_formed


def _run(args: list[te.Tensor], inputs: list[np.ndarray], out: np.ndarray) -> np.ndarray:
    mlc.build(te.create_prim_func(args), target="llvm")(*inputs, out)
    return out


# -- integer constants a dtype cannot hold ---------------------------------------------------

@pytest.mark.parametrize("value, dtype", [(1000, "int8"), (-1, "uint8"), (2**40, "int32"),
                                          (2**70, None)])
def test_te_const_refuses_a_value_its_dtype_cannot_hold(value: int, dtype: str | None) -> None:
    with pytest.raises(MLCTypeError, match=f"{value} does not fit"):
        te.const(value, dtype)


def test_an_int8_operand_with_a_constant_it_cannot_hold_is_refused() -> None:
    # X[i] + 1000 compiled to X[i] + (-24): numpy raises OverflowError for the same thing
    X = te.placeholder((4,), "int8", name="X")
    with pytest.raises(MLCTypeError, match="1000 beside an operand of dtype int8"):
        te.compute((4,), lambda i: X[i] + 1000, name="Y")
    Y = te.compute((4,), lambda i: X[i].astype("int32") + 1000, name="Y")
    x = np.array([-128, -1, 0, 127], "int8")
    y = _run([X, Y], [x], np.zeros(4, "int32"))
    np.testing.assert_array_equal(y, x.astype("int32") + 1000)


def test_int8_edges_compute() -> None:
    X = te.placeholder((4,), "int8", name="X")
    Y = te.compute((4,), lambda i: te.max(te.min(X[i], te.const(127, "int8")), -128), name="Y")
    x = np.array([-128, -1, 0, 127], "int8")
    np.testing.assert_array_equal(_run([X, Y], [x], np.zeros(4, "int8")), x)


def test_te_const_takes_numpy_scalars_with_their_dtype() -> None:
    c = te.const(np.int64(5))
    assert (c.dtype, int(c)) == ("int64", 5)
    assert te.const(np.float16(0.5)).dtype == "float16"
    with pytest.raises(MLCTypeError, match="does not fit uint8"):
        te.const(np.int64(-1), "uint8")


def test_a_size_past_int64_is_refused() -> None:
    with pytest.raises(TEError, match="9223372036854775808"):
        te.placeholder((2**63,), name="X")


# -- reduce axes ---------------------------------------------------------------------------------

def test_a_reduce_axis_given_twice_is_refused() -> None:
    # te.sum(A[k], axis=[k, k]) reached the build and raised KeyError: k
    A = te.placeholder((4,), name="A")
    k = te.reduce_axis((0, 4), name="k")
    with pytest.raises(TEError, match="the reduce axis 'k' is given twice"):
        te.compute((1,), lambda i: te.sum(A[k], axis=[k, k]), name="B")


@pytest.mark.parametrize("dom", [(0, -3), (4, 0)])
def test_a_reduce_axis_that_ends_before_it_starts_is_refused(dom: tuple[int, int]) -> None:
    with pytest.raises(TEError, match="ends before it starts"):
        te.reduce_axis(dom, name="k")


def test_an_empty_reduce_axis_sums_to_zero() -> None:
    A = te.placeholder((4,), name="A")
    k = te.reduce_axis((2, 2), name="k")
    B = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="B")
    np.testing.assert_array_equal(_run([A, B], [np.ones(4, "float32")],
                                       np.full(1, 7, "float32")), [0.0])


def test_one_reduce_axis_in_two_computes() -> None:
    A = te.placeholder((4,), name="A")
    k = te.reduce_axis((0, 4), name="k")
    B = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="B")
    C = te.compute((1,), lambda i: te.sum(A[k] * 2.0, axis=k), name="C")
    a = np.arange(4, dtype="float32")
    b, c = np.zeros(1, "float32"), np.zeros(1, "float32")
    mlc.build(te.create_prim_func([A, B, C]), target="llvm")(a, b, c)
    np.testing.assert_array_equal([b[0], c[0]], [a.sum(), 2 * a.sum()])


# -- argument lists ------------------------------------------------------------------------------

@pytest.mark.parametrize("twice", ["input", "output"])
def test_a_tensor_listed_twice_is_refused(twice: str) -> None:
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    args = [A, B, A] if twice == "input" else [A, B, B]
    with pytest.raises(TEError, match="is in the argument list twice"):
        te.create_prim_func(args)


# -- Python on symbolic expressions --------------------------------------------------------------

def test_python_abs_of_an_expression_is_te_abs() -> None:
    A = te.placeholder((4,), name="A")
    X = te.placeholder((4,), "int32", name="X")
    B = te.compute((4,), lambda i: abs(A[i] - 2.0), name="B")
    Y = te.compute((4,), lambda i: abs(X[i]), name="Y")
    a, x = np.arange(4, dtype="float32"), np.array([-3, -1, 0, 5], "int32")
    np.testing.assert_array_equal(_run([A, B], [a], np.zeros(4, "float32")), np.abs(a - 2))
    np.testing.assert_array_equal(_run([X, Y], [x], np.zeros(4, "int32")), np.abs(x))
    assert int(abs(te.const(-3))) == 3 and float(abs(te.const(-2.5))) == 2.5


@pytest.mark.parametrize("fn, expected", [
    (lambda e: e ** 2, "has no `\\*\\*`; write te.pow"),
    (lambda e: 2 ** e, "has no `\\*\\*`"),
    (round, "round"),
    (int, "int"),
    (float, "float"),
])
def test_python_operators_without_a_meaning_raise_typed_errors(fn: object,
                                                               expected: str) -> None:
    A = te.placeholder((4,), name="A")
    with pytest.raises(MLCTypeError, match=expected):
        te.compute((4,), lambda i: fn(A[i]), name="B")  # type: ignore[operator]


# -- names ---------------------------------------------------------------------------------------

def test_names_with_spaces_build_and_round_trip() -> None:
    X = te.placeholder((4,), name="my input")
    B = te.compute((4,), lambda i: X[i] + 1.0, name="my output")
    func = te.create_prim_func([X, B])
    back = from_source(func.script())
    tir.assert_structural_equal(func, back)
    x = np.arange(4, dtype="float32")
    for f in (func, back):
        out = np.zeros(4, "float32")
        mlc.build(f, target="llvm")(x, out)
        np.testing.assert_array_equal(out, x + 1)


def test_a_gather_with_uint8_indices_is_checked_when_it_runs() -> None:
    # the index's dtype bound (255) was taken for a proof that the read leaves A: refused
    # before running even with indices in range
    A = te.placeholder((4,), name="A")
    idx = te.placeholder((4,), "uint8", name="I")
    B = te.compute((4,), lambda i: A[idx[i]], name="B")
    f = mlc.build(te.create_prim_func([A, idx, B]), target="llvm")
    a, b = np.arange(4, dtype="float32") * 10, np.zeros(4, "float32")
    f(a, np.array([3, 0, 2, 1], "uint8"), b)
    np.testing.assert_array_equal(b, [30, 0, 20, 10])
    with pytest.raises(IndexOutOfBoundsError, match="the index was 255"):
        f(a, np.array([0, 255, 1, 2], "uint8"), b)


def test_numpy_scalars_beside_an_int8_operand() -> None:
    X = te.placeholder((4,), "int8", name="X")
    # np.float32(2.5) became the int8 constant 2: X * 2.5 computed X * 2
    Y = te.compute((4,), lambda i: X[i] * np.float32(2.5), name="Y")
    assert Y.dtype == "float32"
    x = np.array([-4, -1, 2, 3], "int8")
    np.testing.assert_array_equal(_run([X, Y], [x], np.zeros(4, "float32")), x * 2.5)
    with pytest.raises(MLCTypeError, match="1000 does not fit int8"):
        te.compute((4,), lambda i: X[i] * np.int64(1000), name="Z")


@pytest.mark.parametrize("kind, expected", [
    ("compute name", "a name is a string"),
    ("placeholder name", "a name is a string"),
    ("fcompute", "the function of the indices"),
])
def test_malformed_compute_arguments_are_te_errors(kind: str, expected: str) -> None:
    A = te.placeholder((4,), name="A")
    bad: Any = {"compute name": None, "placeholder name": 3, "fcompute": 3}[kind]
    with pytest.raises(TEError, match=expected):
        if kind == "compute name":
            te.compute((4,), lambda i: A[i], name=bad)
        elif kind == "placeholder name":
            te.placeholder((4,), name=bad)
        else:
            te.compute((4,), bad, name="B")


def test_dtype_none_is_the_default_float32() -> None:
    assert te.placeholder((4,), dtype=None, name="X").dtype == "float32"  # type: ignore[arg-type]


def test_an_index_chosen_by_if_then_else_is_bounded_per_branch() -> None:
    # B[select(i < 32, i + 32, i - 32)] was refused before running: the bound of the index
    # joined both branches over all of i ([-32, 95])
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[te.if_then_else(i < 32, i + 32, i - 32)] * 2.0,
                   name="B")
    a = np.arange(64, dtype="float32")
    np.testing.assert_array_equal(_run([A, B], [a], np.zeros(64, "float32")),
                                  np.roll(a, 32) * 2)
    C = te.compute((64,), lambda i: A[te.if_then_else(i < 32, i + 33, i - 32)], name="C")
    with pytest.raises(LoweringError, match="reaches 64"):
        mlc.build(te.create_prim_func([A, C]), target="llvm")


def test_an_expression_too_deep_for_the_compiler_is_a_te_error() -> None:
    # Horner's rule over 1000 coefficients: RecursionError escaped te.compute
    A = te.placeholder((4,), name="A")
    e: tir.PrimExpr = A[0]
    for n in range(1000):
        e = e * A[n % 4] - 1.0
    with pytest.raises(TEError, match="nested more than 250 levels deep"):
        te.compute((1,), lambda i: e, name="B")


def test_an_expression_that_doubles_by_sharing_is_refused_at_once() -> None:
    # e = e * 1.5 + e, 25 times: 2**25 terms written out; te.compute walked them all (hung)
    A = te.placeholder((4,), name="A")
    e: tir.PrimExpr = A[0]
    for _ in range(25):
        e = e * 1.5 + e
    with pytest.raises(TEError, match="of more than 1000000 terms written out"):
        te.compute((1,), lambda i: e, name="B")


def test_horner_within_the_limit_computes() -> None:
    A = te.placeholder((4,), name="A")
    coef = [0.5, -1.0, 0.25, 2.0] * 20
    B = te.compute((4,), lambda i: functools.reduce(lambda acc, c: acc * A[i] + c, coef,
                                                   te.const(0.0)), name="B")
    a = np.linspace(-1, 1, 4, dtype="float32")
    np.testing.assert_allclose(_run([A, B], [a], np.zeros(4, "float32")),
                               np.polyval(np.array(coef, "float32"), a), rtol=1e-4)


def _chain(n: int) -> tuple[te.Tensor, list[te.Tensor]]:
    A = te.placeholder((4,), name="A")
    stages = [A]
    for k in range(n):
        prev = stages[-1]
        stages.append(te.compute((4,), lambda i, p=prev: p[i] * 0.5 + 1.0, name=f"B{k}"))
    return A, stages


def test_a_chain_of_a_thousand_stages_makes_a_prim_func() -> None:
    # create_prim_func ordered the stages recursively: RecursionError at ~990 stages
    A, stages = _chain(1000)
    func = te.create_prim_func([A, stages[-1]])
    sch = tir.Schedule(func)
    assert sch.get(sch.get_block("B999")) is not None


def test_a_chain_of_a_thousand_stages_builds() -> None:
    # 1000 intermediates lower to 1000 allocations nested one in the other: compact_buffers
    # (and the verifier, the printer, the code generators) ran out of Python's recursion
    # depth; a walk that does is run again on a deep stack (mlc.tir.deep)
    A, stages = _chain(1000)
    func = te.create_prim_func([A, stages[-1]])
    b = np.zeros(4, "float32")
    mlc.build(func, target="llvm")(np.zeros(4, "float32"), b)
    np.testing.assert_allclose(b, 2.0)
    lowered = mlc.lower(func)
    verify_well_formed(lowered)
    text = str(lowered)
    assert "unprintable" not in text and "B998 = alloc_buffer((4,)" in text


def test_a_lowering_pass_that_runs_out_of_recursion_is_a_lowering_error() -> None:
    from mlc.transform import run_passes

    def deep(func: tir.PrimFunc) -> tir.PrimFunc:
        raise RecursionError("maximum recursion depth exceeded")

    A, stages = _chain(2)
    with pytest.raises(LoweringError, match="'deep' ran out of recursion depth on 'main', even"):
        run_passes(te.create_prim_func([A, stages[-1]]), [("deep", deep)])


def test_inlining_a_long_chain_stops_before_the_expression_gets_too_deep() -> None:
    # compute_inline of 300 stages built an expression 600 levels deep: RecursionError
    A, stages = _chain(300)
    sch = tir.Schedule(te.create_prim_func([A, stages[-1]]))
    with pytest.raises(ScheduleError, match="more than 250 levels deep"):
        for k in range(299):
            sch.compute_inline(sch.get_block(f"B{k}"))
