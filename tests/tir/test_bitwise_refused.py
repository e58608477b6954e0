"""Bitwise operators on integer expressions: refused by name with the arithmetic that does
the same (they raised Python's bare TypeError "unsupported operand type(s)", and ``~`` on an
integer built a logical Not)."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import MLCTypeError

A = te.placeholder((8,), "int32", name="A")


@pytest.mark.parametrize("build, shown", [
    (lambda: A[0] << 2, "`A[0] << 2`"), (lambda: 2 << A[0], "`2 << A[0]`"),
    (lambda: A[0] >> 1, "`A[0] >> 1`"), (lambda: A[0] ^ 3, "`A[0] ^ 3`"),
    (lambda: 3 ^ A[0], "`3 ^ A[0]`"), (lambda: ~A[0], "`~A[0]`"),
    (lambda: A[0] & 3, "`A[0]`, `3`"),
])
def test_bitwise_operators_say_what_works(build, shown) -> None:
    with pytest.raises(MLCTypeError, match="x >> k is x // 2\\*\\*k") as err:
        build()
    assert shown in str(err.value)


def test_the_arithmetic_the_message_gives_matches_numpys_shifts() -> None:
    B = te.compute((8,), lambda i: A[i] // 4 + A[i] * 8 + A[i] % 16, name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B])
    a = np.array([-100, -17, -1, 0, 1, 7, 1000, -2**20], "int32")
    b = np.zeros(8, "int32")
    f(a, b)
    np.testing.assert_array_equal(b, (a >> 2) + (a << 3) + (a & 15))


def test_not_on_a_condition_still_works() -> None:
    B = te.compute((8,), lambda i: te.if_then_else(~(A[i] < 2), 1, 0), name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B])
    a = np.arange(8, dtype="int32")
    b = np.zeros(8, "int32")
    f(a, b)
    np.testing.assert_array_equal(b, (a >= 2).astype("int32"))
