"""Index arithmetic into a buffer that may hold more than 2**31 - 1 elements (a symbolic
size, 1-D too) is done in int64 down to its leaves, and an index over a symbolic loop into an
array of constant shape is checked when the function runs."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import IndexOutOfBoundsError


def test_symbolic_1d_index_is_computed_in_int64() -> None:
    n = te.var("n")
    A = te.placeholder((n,), "int8", name="A")
    # (i + n + 4) * 2**30 wraps to a small int32 number; in int64 it is far outside A
    B = te.compute((1,), lambda i: A[(i + n + 4) * 1073741824], name="B")
    s = te.create_schedule(B.op)
    text = str(mlc.lower(s, [A, B]))
    assert "int64(n) * int64(1073741824)" in text, text
    with pytest.raises(IndexOutOfBoundsError, match="15032385536"):
        mlc.build(s, [A, B])(np.arange(10, dtype="int8"), np.zeros(1, "int8"))


def test_symbolic_2d_index_is_widened_before_it_can_wrap() -> None:
    n = te.var("n")
    A = te.placeholder((n, 2), "int8", name="A")
    B = te.compute((1,), lambda i: A[(i + n) * 1073741824, 1], name="B")
    s = te.create_schedule(B.op)
    text = str(mlc.lower(s, [A, B]))  # dimension 0 checked on its own, in int64
    assert 'check_index(int64(n) * int64(1073741824), n, "A[(i + n) * 1073741824, 1] in ' \
        'dimension 0' in text, text
    with pytest.raises(IndexOutOfBoundsError):
        mlc.build(s, [A, B])(np.zeros((4, 2), "int8"), np.zeros(1, "int8"))


def test_symbolic_loop_into_a_constant_array_is_checked() -> None:
    m = te.var("m")
    A = te.placeholder((10,), name="A")
    B = te.compute((m,), lambda i: A[i * 3], name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B])
    b = np.zeros(4, "float32")
    f(np.arange(10, dtype="float32"), b)
    np.testing.assert_array_equal(b, [0, 3, 6, 9])
    with pytest.raises(IndexOutOfBoundsError, match=r"A\[i \* 3\].*was 12"):
        f(np.arange(10, dtype="float32"), np.zeros(5, "float32"))
    A2 = te.placeholder((10, 4), name="A2")
    B2 = te.compute((m,), lambda i: A2[1, i], name="B2")
    f2 = mlc.build(te.create_schedule(B2.op), [A2, B2])
    with pytest.raises(IndexOutOfBoundsError, match=r"A2\[1, i\] in dimension 1.*was 4"):
        f2(np.zeros((10, 4), "float32"), np.zeros(6, "float32"))


def test_constant_shapes_carry_no_checks() -> None:
    X = te.placeholder((64, 64), name="X")
    W = te.placeholder((64, 64), name="W")
    k = te.reduce_axis((0, 64), name="k")
    Y = te.compute((64, 64), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    s = te.create_schedule(Y.op)
    jo, ji = s[Y].split(Y.op.axis[1], factor=16)
    s[Y].reorder(Y.op.axis[0], jo, Y.op.reduce_axis[0], ji)
    s[Y].vectorize(ji)
    f = mlc.build(s, [X, W, Y])
    assert "__mlc_error" not in f.get_source("ll")
