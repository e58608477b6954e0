"""Checks each index against its own dimension, and only what is not proven: a tiled GEMM over
a symbolic n carries no run-time check; a wrong row or column of a 2-D symbolic array is still
caught, naming the dimension."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import IndexOutOfBoundsError


def test_a_tiled_gemm_over_symbolic_n_checks_nothing_at_run_time():
    n = te.var("n")
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 32, 32)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[C].vectorize(ji)
    f = mlc.build(s, [A, B, C])
    assert "__mlc_error" not in f.get_source("ll")  # every index is proven by its guard
    rng = np.random.default_rng(0)
    for size in (1, 33, 70):
        a = rng.random((size, size), dtype=np.float32)
        b = rng.random((size, size), dtype=np.float32)
        c = np.zeros((size, size), np.float32)
        f(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-5)


@pytest.mark.parametrize("which", ["row", "column"])
def test_an_index_past_its_dimension_is_caught_in_either_dimension(which):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    if which == "row":  # the row after the last: past the end of the array
        B = te.compute((n, m), lambda i, j: A[i + 1, j], name="B")
    else:  # column j + 1 of the last column: the next row's first element in a flat array
        B = te.compute((n, m), lambda i, j: A[i, j + 1], name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B])
    a = np.arange(12, dtype="float32").reshape(3, 4)
    dim = "0" if which == "row" else "1"
    with pytest.raises(IndexOutOfBoundsError, match=f"dimension {dim} of A"):
        f(a, np.zeros((3, 4), "float32"))
