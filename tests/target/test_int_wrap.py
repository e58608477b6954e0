"""Integer arithmetic on data wraps, as in numpy: compiled code must not assume it cannot.
LLVM's ``nsw`` (no signed wrap) on every int32/int64 add and multiply let it fold
``A[i] * A[i] >= 0`` to true and ``(A[i] + 100) < (A[i + 1] + 100)`` to ``A[i] < A[i + 1]``,
both wrong near INT32_MAX; index arithmetic keeps the flag (it lets loops vectorize)."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te

N = 8


def data(dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.array([info.max, info.max - 50, 1, 0, -1, info.max // 2 + 1,
                     46341 if dtype == "int32" else 3037000500, info.min], dtype)


def run(fn, dtype: str, vectorize: bool) -> np.ndarray:
    A = te.placeholder((N,), dtype, name="A")
    B = te.compute((N,), lambda i: fn(A, i), name="B")
    s = te.create_schedule(B.op)
    if vectorize:
        s[B].vectorize(B.op.axis[0])
    f = mlc.build(s, [A, B])
    b = np.zeros(N, B.dtype)
    f(data(dtype), b)
    return b


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_square_of_data_may_wrap_negative(dtype: str, vectorize: bool) -> None:
    got = run(lambda A, i: te.if_then_else(A[i] * A[i] >= 0, 1, 0), dtype, vectorize)
    a = data(dtype)
    np.testing.assert_array_equal(got, (a * a >= 0).astype("int32"))
    assert got.min() == 0  # some square wrapped


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_adding_to_both_sides_of_a_comparison_of_data(dtype: str, vectorize: bool) -> None:
    got = run(lambda A, i: te.if_then_else(A[i] + 100 < A[(i + 1) % N] + 100, 1, 0), dtype,
              vectorize)
    a = data(dtype)
    np.testing.assert_array_equal(got, (a + 100 < np.roll(a, -1) + 100).astype("int32"))


def test_a_let_of_data_wraps_too() -> None:
    from mlc import tir
    from mlc.tir import Buffer, BufferLoad, BufferStore, For, ForKind, LetStmt, PrimFunc, Var

    a_buf, b_buf = Buffer("A", (N,), "int32"), Buffer("B", (N,), "int32")
    i, x = Var("i", "int32"), Var("x", "int32")
    body = For(i, tir.const(0), tir.const(N), ForKind.SERIAL, LetStmt(
        x, BufferLoad(a_buf, (i,)),
        BufferStore(b_buf, tir.Select(x * x >= 0, tir.const(1), tir.const(0)), (i,))))
    f = mlc.build(PrimFunc((a_buf, b_buf), body, name="let_wrap"))
    b = np.zeros(N, "int32")
    f(data("int32"), b)
    a = data("int32")
    np.testing.assert_array_equal(b, (a * a >= 0).astype("int32"))
