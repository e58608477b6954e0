"""Compiled code never traps and never reads outside an array: integer division by zero and
indices that cannot be checked before the run raise typed errors from the call."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import IndexOutOfBoundsError, IntegerDivisionError, RuntimeCheckError

INT_MIN = np.iinfo("int32").min


def binary(op, dtype="int32"):
    A = te.placeholder((4,), name="A", dtype=dtype)
    B = te.placeholder((4,), name="B", dtype=dtype)
    C = te.compute((4,), lambda i: op(A[i], B[i]), name="C")
    return mlc.build(te.create_schedule(C.op), [A, B, C])


OPS = {
    "floordiv": lambda a, b: a // b,
    "floormod": lambda a, b: a % b,
    "truncdiv": lambda a, b: te.truncdiv(a, b),
    "truncmod": lambda a, b: te.truncmod(a, b),
}


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint32"])
def test_a_zero_divisor_raises_instead_of_killing_the_process(name: str, dtype: str) -> None:
    f = binary(OPS[name], dtype)
    a = np.array([7, 8, 9, 10], dtype)
    c = np.zeros(4, dtype)
    with pytest.raises(IntegerDivisionError, match=r"divisor 0.*outputs of this call are partial"):
        f(a, np.array([1, 0, 2, 3], dtype), c)
    with pytest.raises(ZeroDivisionError):  # also what Python users catch
        f(a, np.array([0, 1, 1, 1], dtype), c)
    f(a, np.array([2, 3, 4, 5], dtype), c)  # the module still works afterwards
    expected = {"floordiv": a // [2, 3, 4, 5], "floormod": a % [2, 3, 4, 5]}
    np.testing.assert_array_equal(c, expected.get(name, np.trunc(a / [2, 3, 4, 5]).astype(dtype)
                                                  if "div" in name else np.fmod(a, [2, 3, 4, 5])))


@pytest.mark.parametrize("name", ["floordiv", "truncdiv", "floormod"])
def test_int_min_divided_by_minus_one_raises(name: str) -> None:
    f = binary(OPS[name])
    c = np.zeros(4, "int32")
    with pytest.raises(IntegerDivisionError, match="divisor -1"):
        f(np.array([1, 2, INT_MIN, 4], "int32"), np.array([1, 1, -1, 1], "int32"), c)


def test_vectorized_division_checks_every_lane() -> None:
    A = te.placeholder((64,), name="A", dtype="int32")
    B = te.placeholder((64,), name="B", dtype="int32")
    C = te.compute((64,), lambda i: A[i] // B[i], name="C")
    s = te.create_schedule(C.op)
    _, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    f = mlc.build(s, [A, B, C])
    a = np.arange(64, dtype="int32")
    b = np.ones(64, "int32")
    c = np.zeros(64, "int32")
    f(a, b, c)
    np.testing.assert_array_equal(c, a)
    b[45] = 0
    with pytest.raises(IntegerDivisionError, match="divisor 0"):  # the failing lane's value
        f(a, b, c)


def test_a_division_in_a_parallel_loop_is_checked_in_every_thread() -> None:
    A = te.placeholder((4096,), name="A", dtype="int32")
    B = te.placeholder((4096,), name="B", dtype="int32")
    C = te.compute((4096,), lambda i: A[i] % B[i], name="C")
    s = te.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    f = mlc.build(s, [A, B, C])
    a, b, c = np.arange(4096, dtype="int32"), np.full(4096, 7, "int32"), np.zeros(4096, "int32")
    f(a, b, c)
    np.testing.assert_array_equal(c, a % 7)
    b[4000] = 0
    with pytest.raises(IntegerDivisionError, match=r"A\[i\] % B\[i\]"):
        f(a, b, c)


def gather():
    A = te.placeholder((8,), name="A")
    idx = te.placeholder((4,), name="I", dtype="int32")
    G = te.compute((4,), lambda i: A[idx[i]], name="G")
    return A, idx, G


@pytest.mark.parametrize("bad", [8, -1, 2**31 - 1, -(2**31)])
def test_a_gather_with_a_bad_index_raises(bad: int) -> None:
    A, idx, G = gather()
    f = mlc.build(te.create_schedule(G.op), [A, idx, G])
    a = np.arange(8, dtype="float32")
    g = np.zeros(4, "float32")
    f(a, np.array([0, 3, 7, 1], "int32"), g)
    np.testing.assert_array_equal(g, [0, 3, 7, 1])
    with pytest.raises(IndexOutOfBoundsError, match=rf"A\[I\[i\]\].*index was {bad}"):
        f(a, np.array([0, bad, 1, 2], "int32"), g)
    with pytest.raises(IndexError):
        f(a, np.array([bad, 0, 0, 0], "int32"), g)


def test_an_access_over_a_symbolic_extent_is_checked() -> None:
    n = te.var("n")
    B = te.placeholder((n,), name="B")
    C = te.compute((4,), lambda i: B[i * 4096], name="C")
    f = mlc.build(te.create_schedule(C.op), [B, C])
    c = np.zeros(4, "float32")
    f(np.ones(4 * 4096, "float32"), c)
    np.testing.assert_array_equal(c, 1.0)
    with pytest.raises(IndexOutOfBoundsError, match=r"B\[i \* 4096\] of B with n elements"):
        f(np.ones(10, "float32"), c)


def test_a_wrong_guard_in_if_then_else_is_caught() -> None:
    A = te.placeholder((8,), name="A")
    D = te.compute((8,), lambda i: te.if_then_else(i < 8, A[i + 5], 0.0), name="D")
    f = mlc.build(te.create_schedule(D.op), [A, D])
    with pytest.raises(IndexOutOfBoundsError, match="index was 8"):
        f(np.arange(8, dtype="float32"), np.zeros(8, "float32"))
    good = te.compute((8,), lambda i: te.if_then_else(i < 3, A[i + 5], 0.0), name="D")
    d = np.zeros(8, "float32")
    mlc.build(te.create_schedule(good.op), [A, good])(np.arange(8, dtype="float32"), d)
    np.testing.assert_array_equal(d, [5, 6, 7, 0, 0, 0, 0, 0])


def test_checks_can_be_switched_off_by_experts(monkeypatch: pytest.MonkeyPatch) -> None:
    A, idx, G = gather()
    s = te.create_schedule(G.op)
    assert mlc.build(s, [A, idx, G]).has_checks
    assert not mlc.build(s, [A, idx, G], bounds_check=False).has_checks
    monkeypatch.setenv("MLC_BOUNDS_CHECK", "0")
    assert not mlc.build(s, [A, idx, G]).has_checks


def test_a_kernel_with_constant_shapes_has_no_checks() -> None:
    """check_bounds proves affine accesses over constant shapes before the run: no cost."""
    A = te.placeholder((64, 64), name="A")
    k = te.reduce_axis((0, 64), name="k")
    C = te.compute((64, 64), lambda i, j: te.sum(A[i, k] * A[k, j], axis=k), name="C")
    assert not mlc.build(te.create_schedule(C.op), [A, C]).has_checks


def test_bind_and_time_evaluator_check_too() -> None:
    f = binary(OPS["floordiv"])
    a, c = np.arange(4, dtype="int32"), np.zeros(4, "int32")
    run = f.bind(a, np.array([1, 0, 1, 1], "int32"), c)
    with pytest.raises(RuntimeCheckError):
        run()
    with pytest.raises(RuntimeCheckError):
        f.time_evaluator(number=1, repeat=1)(a, np.array([0, 0, 1, 1], "int32"), c)


def test_offsets_beyond_int32_use_64_bit_arithmetic() -> None:
    """A[n // 2, 3] of a 46341 x 46341 int8 array is element 1073741828 + ... > 2**31."""
    rows = 46341  # rows * rows > 2**31
    A = te.placeholder((rows, rows), name="A", dtype="int8")
    B = te.compute((1,), lambda i: A[rows - 1, rows - 1 - i], name="B")
    func = mlc.lower(te.create_schedule(B.op), [A, B])
    assert "int64" in str(func)
    f = mlc.build(te.create_schedule(B.op), [A, B])
    a = np.zeros((rows, rows), "int8")  # calloc'ed: untouched pages cost no memory
    a[rows - 1, rows - 1] = 42
    b = np.zeros(1, "int8")
    f(a, b)
    assert b[0] == 42
    assert "i64 2147488280" in f.get_source("ll") or "2147488280" in f.get_source("ll-unopt")
