"""An integer division or modulo by the constant 0 is refused when the expression is built
(ZeroDivisorError: a TEError and a ZeroDivisionError); a divisor that becomes 0 only after
simplification, or only in code a guard keeps from running, is left to the run-time check."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import IntegerDivisionError, ScriptError, ZeroDivisorError
from mlc.script import from_source

A = te.placeholder((4,), "int32", name="A")


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a // 0,
        lambda a: a % 0,
        lambda a: te.floordiv(a, 0),
        lambda a: te.floormod(a, 0),
        lambda a: te.truncdiv(a, 0),
        lambda a: te.truncmod(a, 0),
        lambda a: a // tir.const(0, "int64"),
        lambda a: a // tir.const(0, "int32"),
    ],
)
def test_constant_zero_divisor_is_refused_when_built(make: object) -> None:
    with pytest.raises(ZeroDivisorError, match=r"integer division by the constant 0: `.*A\[i\]"):
        te.compute((4,), lambda i: make(A[i]), name="B")  # type: ignore[operator]
    with pytest.raises(ZeroDivisionError):
        te.compute((4,), lambda i: make(A[i]), name="B")  # type: ignore[operator]


def test_float_division_by_zero_is_ieee() -> None:
    F = te.placeholder((3,), name="F")
    B = te.compute((3,), lambda i: F[i] / 0.0, name="B")
    b = np.empty(3, "float32")
    with np.errstate(all="ignore"):
        mlc.build(te.create_schedule(B.op), [F, B])(np.array([1, -1, 0], "float32"), b)
    np.testing.assert_array_equal(np.isinf(b), [True, True, False])


def test_divisor_zero_after_simplification_is_a_run_time_error() -> None:
    n = te.var("n")
    X = te.placeholder((n,), "int32", name="X")
    B = te.compute((4,), lambda i: X[i] // (n - n + i * 0), name="B")
    f = mlc.build(te.create_schedule(B.op), [X, B])
    with pytest.raises(IntegerDivisionError):
        f(np.arange(4, dtype="int32"), np.zeros(4, "int32"))


def test_guarded_divisor_in_unrolled_copies_builds() -> None:
    # unrolling j makes a copy `if 0 != 0: A[i] // 0`: a guard that never runs it
    B = te.compute((4, 4), lambda i, j: te.if_then_else(j != 0, A[i] // j, 0), name="B")
    s = te.create_schedule(B.op)
    s[B].unroll(B.op.axis[1])
    b = np.empty((4, 4), "int32")
    mlc.build(s, [A, B])(np.array([0, 5, 9, -7], "int32"), b)
    a = np.array([0, 5, 9, -7])[:, None]
    j = np.arange(4)[None, :]
    np.testing.assert_array_equal(b, np.where(j != 0, a // np.maximum(j, 1), 0))


def test_script_points_at_the_line() -> None:
    text = '''
@T.prim_func
def main(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            B[vi] = T.truncmod(A[vi], 0)
'''
    with pytest.raises(ScriptError, match=r"line 7.*constant 0"):
        from_source(text)
    with pytest.raises(ScriptError, match=r"constant 0"):
        from_source(text.replace("T.truncmod(A[vi], 0)", "A[vi] // 0"))
