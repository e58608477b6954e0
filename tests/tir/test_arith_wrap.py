"""The simplifier on integer data: numpy wraps int32/int64 arithmetic, so rules that hold
only for mathematical integers (a comparison or division decided on ``a - b`` or on a
linear form) must not fire on data. They folded ``A[i] + 1 > A[i]`` to true and
``A[i] * 2 // 2`` to ``A[i]`` (wrong at INT32_MAX), and in uint8/int8/int16
``A[i] * 4 // 8`` to ``A[i] // 2`` (wrong from 64 up). Index arithmetic keeps them."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.tir import Analyzer, Buffer, BufferLoad, Range, Var, const
from mlc.tir.printer import expr_to_str


def load(dtype: str = "int32") -> BufferLoad:
    return BufferLoad(Buffer("A", (8,), dtype), (Var("i", "int32"),))


@pytest.mark.parametrize("make, kept", [
    (lambda x: x + 1 > x, "A[i] + 1 > A[i]"),
    (lambda x: x * 2 // 2, "A[i] * 2 // 2"),
    (lambda x: (x * 4) % 8, "A[i] * 4 % 8"),
    (lambda x: x * x >= 0, "A[i] * A[i] >= 0"),
])
def test_rules_for_mathematical_integers_leave_data_alone(make, kept: str) -> None:
    assert expr_to_str(Analyzer().simplify(make(load()))) == kept


def test_index_arithmetic_still_simplifies() -> None:
    ana = Analyzer()
    i = Var("i", "int32")
    ana.bind(i, Range(const(0), const(64)))
    assert expr_to_str(ana.simplify(i * 2 // 2)) == "i"
    assert expr_to_str(ana.simplify((i * 4) // 8)) == "i // 2"
    assert expr_to_str(ana.simplify(i + 1 > i)) == "True"
    assert expr_to_str(ana.simplify(load() + 1 - 1)) == "A[i]"  # exact in wrapping arithmetic


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_compiled_comparisons_and_divisions_of_data_wrap_like_numpy(dtype: str) -> None:
    info = np.iinfo(dtype)
    a = np.array([info.max, info.max - 1, 1, 0, -1, info.min, info.max // 2 + 1, 7], dtype)
    A = te.placeholder((8,), dtype, name="A")
    B = te.compute((8,), lambda i: te.if_then_else(A[i] + 1 > A[i], A[i] * 2 // 2, -A[i]),
                   name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B])
    b = np.zeros(8, dtype)
    f(a, b)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(b, np.where(a + 1 > a, a * 2 // 2, -a))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "uint32"])
def test_narrow_types_divide_what_wrapped(dtype: str) -> None:
    a = np.array([0, 1, 63, 64, 100, 127, 200, np.iinfo(dtype).max], "int64").astype(dtype)
    A = te.placeholder((8,), dtype, name="A")
    B = te.compute((8,), lambda i: A[i] * 4 // 8 + A[i] * 4 % 8, name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B])
    b = np.zeros(8, dtype)
    f(a, b)
    np.testing.assert_array_equal(b, (a * 4 // 8 + a * 4 % 8).astype(dtype))
