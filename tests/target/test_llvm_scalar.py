"""LLVM backend, scalar code: arithmetic, integer division, casts, Select, math, compared
against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from llvm_helpers import binary, build, loop, unary

from mlc.tir import (
    Buffer,
    BufferStore,
    Call,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Not,
    Select,
    SizeVar,
    Var,
    const,
)

RNG = np.random.default_rng(0)


def test_elementwise_add_with_symbolic_size() -> None:
    f = binary(lambda a, b: a + b)
    for n in (1, 7, 1000):
        a, b = RNG.random(n, dtype=np.float32), RNG.random(n, dtype=np.float32)
        c = np.empty(n, np.float32)
        f(a, b, c)
        np.testing.assert_allclose(c, a + b, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_floor_div_and_mod_follow_python_with_negative_numbers(dtype: str) -> None:
    a = np.array([-7, -6, -1, 0, 1, 6, 7, -7, 7, -100, 100, 5], dtype=dtype)
    b = np.array([2, 3, 3, 5, 3, 4, -2, -2, 2, 7, -7, -5], dtype=dtype)
    out = np.empty_like(a)
    binary(lambda x, y: x // y, dtype)(a, b, out)
    np.testing.assert_array_equal(out, a // b)
    binary(lambda x, y: x % y, dtype)(a, b, out)
    np.testing.assert_array_equal(out, a % b)


@pytest.mark.parametrize("divisor", [3, -3, 8])
def test_floor_div_mod_by_constants(divisor: int) -> None:
    a = np.arange(-20, 21, dtype=np.int32)
    out = np.empty_like(a)
    unary(lambda x: FloorDiv(x, const(divisor)), "int32")(a, out)
    np.testing.assert_array_equal(out, a // divisor)
    unary(lambda x: FloorMod(x, const(divisor)), "int32")(a, out)
    np.testing.assert_array_equal(out, a % divisor)


def test_truncating_div_and_mod_follow_c() -> None:
    a = np.array([-7, 7, -7, 7, 0, -1], dtype=np.int32)
    b = np.array([2, -2, -2, 2, 3, 5], dtype=np.int32)
    out = np.empty_like(a)
    binary(lambda x, y: Div(x, y), "int32")(a, b, out)
    np.testing.assert_array_equal(out, np.trunc(a / b).astype(np.int32))
    binary(lambda x, y: Mod(x, y), "int32")(a, b, out)
    np.testing.assert_array_equal(out, np.fmod(a, b))


def test_unsigned_division_and_comparisons() -> None:
    a = np.array([250, 7, 128, 255], dtype=np.uint8)
    b = np.array([3, 2, 255, 1], dtype=np.uint8)
    out = np.empty_like(a)
    binary(lambda x, y: x // y, "uint8")(a, b, out)
    np.testing.assert_array_equal(out, a // b)
    binary(lambda x, y: x % y, "uint8")(a, b, out)
    np.testing.assert_array_equal(out, a % b)
    flags = np.empty(4, bool)
    binary(lambda x, y: x > y, "uint8", "bool")(a, b, flags)
    np.testing.assert_array_equal(flags, a > b)  # 250 > 3 unsigned (it is -6 signed)


def test_min_max_and_float_compare() -> None:
    a = np.array([1.5, -2.0, 3.0, np.nan], np.float32)
    b = np.array([1.0, -1.0, 3.0, 1.0], np.float32)
    out = np.empty_like(a)
    binary(lambda x, y: Min(x, y))(a[:3].copy(), b[:3].copy(), out[:3])
    np.testing.assert_array_equal(out[:3], np.minimum(a[:3], b[:3]))
    binary(lambda x, y: Max(x, y))(a[:3].copy(), b[:3].copy(), out[:3])
    np.testing.assert_array_equal(out[:3], np.maximum(a[:3], b[:3]))
    for op, ref in [
        (lambda x, y: x < y, np.less), (lambda x, y: x <= y, np.less_equal),
        (lambda x, y: x > y, np.greater), (lambda x, y: x >= y, np.greater_equal),
        (lambda x, y: x == y, np.equal), (lambda x, y: x != y, np.not_equal),
    ]:
        flags = np.empty(4, bool)
        binary(op, "float32", "bool")(a, b, flags)
        np.testing.assert_array_equal(flags, ref(a, b))  # NaN: only != is true


def test_bool_logic() -> None:
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    out = np.empty(4, bool)
    binary(lambda x, y: x & y, "bool")(a, b, out)
    np.testing.assert_array_equal(out, a & b)
    binary(lambda x, y: x | y, "bool")(a, b, out)
    np.testing.assert_array_equal(out, a | b)
    unary(lambda x: Not(x), "bool")(a, out)
    np.testing.assert_array_equal(out, ~a)


DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]


@pytest.mark.parametrize("src", DTYPES)
def test_casts_between_all_dtypes(src: str) -> None:
    """One kernel per source dtype writes the cast to every destination dtype."""
    values = [0, 1, 2, 7, 100, 127] if src != "bool" else [0, 1, 1, 0, 1, 0]
    if src.startswith("float"):
        values += [2.75, 126.5]
    a = np.array(values, dtype=src)
    n = SizeVar("n", "int32")
    A = Buffer("A", (n,), src)
    outs = tuple(Buffer(f"B_{d}", (n,), d) for d in DTYPES)
    i = Var("i", "int32")
    stores = [BufferStore(B, Cast(B.dtype, A[i]) if B.dtype != src else A[i], (i,)) for B in outs]
    from mlc.tir import seq

    f = build((A, *outs), loop(i, n, seq(*stores)))
    arrays = [np.empty(len(a), d) for d in DTYPES]
    f(a, *arrays)
    for d, got in zip(DTYPES, arrays):
        np.testing.assert_array_equal(got, a.astype(d), err_msg=f"{src} -> {d}")


@pytest.mark.parametrize("dst", ["int8", "int32", "int64", "float16", "float64", "bool"])
def test_casts_of_negative_numbers(dst: str) -> None:
    a = np.array([-1.0, -2.75, -100.0, 0.0, -0.5], np.float32)
    out = np.empty(len(a), dst)
    unary(lambda x: Cast(dst, x), "float32", dst)(a, out)
    np.testing.assert_array_equal(out, a.astype(dst))
    b = np.array([-1, -128, 5, 0], np.int8)
    out = np.empty(len(b), dst)
    unary(lambda x: Cast(dst, x), "int8", dst)(b, out)
    np.testing.assert_array_equal(out, b.astype(dst))


def test_select_only_evaluates_the_chosen_side() -> None:
    """``B[i] = A[i + 2**40] if i < 0 else A[i]``: reading A[i + 2**40] would crash."""
    n = SizeVar("n", "int32")
    A = Buffer("A", (n,), "float32")
    B = Buffer("B", (n,), "float32")
    i = Var("i", "int64")
    far = A[i + IntImm(2**40, "int64")]
    f = build((A, B), loop(i, Cast("int64", n), BufferStore(B, Select(i < 0, far, A[i]), (i,))))
    a = RNG.random(16, dtype=np.float32)
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a)
    assert "select.true" in f.get_source("ll-unopt")  # a branch, not a `select` instruction


def test_select_guards_the_last_element() -> None:
    """A shifted read guarded the way te.if_then_else writes it."""
    n = SizeVar("n", "int32")
    A = Buffer("A", (n,), "int32")
    B = Buffer("B", (n,), "int32")
    i = Var("i", "int32")
    value = Select(i + 1 < n, A[i + 1], const(-1))
    f = build((A, B), loop(i, n, BufferStore(B, value, (i,))))
    a = np.arange(10, dtype=np.int32)
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, np.append(a[1:], -1))


def test_select_without_loads_is_a_select_instruction() -> None:
    f = unary(lambda x: Select(x > 0.5, const(2.0), const(1.0)) * x)
    a = RNG.random(64, dtype=np.float32)
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_allclose(b, np.where(a > 0.5, a * 2, a))
    assert "select.true" not in f.get_source("ll-unopt")


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.vectorize(lambda v: float(np.copysign(np.floor(abs(v) + 0.5), v)))(x)


MATH = {
    "exp": (np.exp, (-3, 3)), "exp2": (np.exp2, (-3, 3)), "log": (np.log, (0.1, 5)),
    "log2": (np.log2, (0.1, 5)), "log10": (np.log10, (0.1, 5)), "sqrt": (np.sqrt, (0, 9)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 9)), "fabs": (np.abs, (-3, 3)),
    "floor": (np.floor, (-3, 3)), "ceil": (np.ceil, (-3, 3)), "trunc": (np.trunc, (-3, 3)),
    "round": (_round_half_away, (-3, 3)), "nearbyint": (np.round, (-3, 3)),
    "sin": (np.sin, (-3, 3)), "cos": (np.cos, (-3, 3)), "tanh": (np.tanh, (-3, 3)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-5, 5)), "abs": (np.abs, (-3, 3)),
}


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.vectorize(math.erf)(x)


MATH["erf"] = (_erf, (-2, 2))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", sorted(MATH))
def test_math_intrinsics_match_numpy(op: str, dtype: str) -> None:
    ref, (lo, hi) = MATH[op]
    a = np.concatenate([RNG.uniform(lo, hi, 61), [lo, hi, (lo + hi) / 2]]).astype(dtype)
    if op in ("round", "nearbyint"):
        a = np.concatenate([a, [-2.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.49999997]]).astype(dtype)
    b = np.empty_like(a)
    unary(lambda x: Call(dtype, op, (x,)), dtype)(a, b)
    tol = 2e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(b, ref(a.astype(np.float64)).astype(dtype), rtol=tol, atol=tol)


def test_pow_and_float16_math() -> None:
    a = RNG.uniform(0.5, 2, 50).astype(np.float32)
    b = RNG.uniform(-2, 2, 50).astype(np.float32)
    c = np.empty_like(a)
    binary(lambda x, y: Call("float32", "pow", (x, y)))(a, b, c)
    np.testing.assert_allclose(c, a**b, rtol=2e-6)
    h = RNG.uniform(-2, 2, 50).astype(np.float16)
    out = np.empty_like(h)
    unary(lambda x: Call("float16", "exp", (x,)) + x, "float16")(h, out)
    expected = np.exp(h.astype(np.float32)).astype(np.float16) + h  # exp rounds to half first
    np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-3)


def test_integer_abs_and_unknown_call() -> None:
    a = np.array([-5, 0, 7, -1], np.int32)
    b = np.empty_like(a)
    unary(lambda x: Call("int32", "abs", (x,)), "int32")(a, b)
    np.testing.assert_array_equal(b, np.abs(a))
    from mlc.errors import CodegenError

    with pytest.raises(CodegenError, match="unknown function 'cbrt'"):
        unary(lambda x: Call("float32", "cbrt", (x,)))


@pytest.mark.parametrize("op", ["round", "nearbyint", "trunc", "floor", "ceil"])
def test_compiled_rounding_means_what_the_intrinsic_table_says(op: str) -> None:
    """The interpreter and the reference evaluator run the table's numpy form; compiled code
    must agree with it on ties (round: away from zero, as C and TVM; nearbyint: to even)."""
    from mlc.tir import intrin

    a = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.49999997, 3.7, -0.0],
                 np.float32)
    b = np.empty_like(a)
    unary(lambda x: Call("float32", op, (x,)), "float32")(a, b)
    np.testing.assert_array_equal(b, intrin.INTRINSICS[op].numpy(a))
