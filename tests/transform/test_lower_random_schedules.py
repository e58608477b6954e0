"""Property: random legal schedules lower to programs that compute what numpy computes."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from lowering_helpers import check_lowered, eval_prim_func

from mlc import te, tir
from mlc.transform import lower

ANNOTATIONS = st.sampled_from(["serial", "vectorize", "unroll", "parallel"])
FACTORS = st.sampled_from([1, 2, 3, 4, 8])


def _annotate(sch, loop, how):
    if how == "vectorize":
        sch.vectorize(loop)
    elif how == "unroll":
        sch.unroll(loop)
    elif how == "parallel":
        sch.parallel(loop)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 40), factor=FACTORS, inner=ANNOTATIONS)
def test_elementwise(n, factor, inner):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: te.sqrt(A[i]) + A[i] * 3.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops(sch.get_block("B"))
    _, ii = sch.split(i, factors=[None, factor])
    _annotate(sch, ii, "serial" if inner == "parallel" else inner)
    lowered = lower(sch.mod)
    check_lowered(lowered)
    a = np.random.rand(n).astype("float32")
    b = np.zeros(n, "float32")
    eval_prim_func(lowered, a, b)
    np.testing.assert_allclose(b, np.sqrt(a) + a * 3.0, rtol=1e-5)


@settings(max_examples=15, deadline=None)
@given(
    m=st.integers(1, 5), n=st.integers(1, 20), kk=st.integers(1, 9),
    fj=FACTORS, fk=FACTORS, inner=ANNOTATIONS, kinner=st.sampled_from(["serial", "unroll"]),
)
def test_matmul(m, n, kk, fj, fk, inner, kinner):
    k = te.reduce_axis((0, kk), name="k")
    X = te.placeholder((m, kk), name="X")
    W = te.placeholder((kk, n), name="W")
    Y = te.compute((m, n), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    sch = tir.Schedule(te.create_prim_func([X, W, Y]))
    i, j, kl = sch.get_loops(sch.get_block("Y"))
    jo, ji = sch.split(j, factors=[None, fj])
    ko, ki = sch.split(kl, factors=[None, fk])
    sch.reorder(i, jo, ko, ki, ji)
    _annotate(sch, ji, "serial" if inner == "parallel" else inner)
    _annotate(sch, ki, kinner)
    if inner == "parallel":
        sch.parallel(i)
    lowered = lower(sch.mod)
    check_lowered(lowered)
    x = np.random.rand(m, kk).astype("float32")
    w = np.random.rand(kk, n).astype("float32")
    y = np.full((m, n), np.nan, "float32")
    eval_prim_func(lowered, x, w, y)
    np.testing.assert_allclose(y, x @ w, rtol=1e-4, atol=1e-5)


@settings(max_examples=10, deadline=None)
@given(m=st.integers(1, 12), n=st.integers(1, 12), fi=FACTORS, fj=FACTORS, inner=ANNOTATIONS)
def test_write_cache_at_a_tile(m, n, fi, fj, inner):
    k = te.reduce_axis((0, 5), name="k")
    X = te.placeholder((m, 5), name="X")
    W = te.placeholder((5, n), name="W")
    Y = te.compute((m, n), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    sch = tir.Schedule(te.create_prim_func([X, W, Y]))
    blk = sch.get_block("Y")
    cw = sch.cache_write(blk, 0, "local")
    i, j = sch.get_loops(cw)[:2]
    io, ii = sch.split(i, factors=[None, fi])
    jo, ji = sch.split(j, factors=[None, fj])
    sch.reorder(io, jo, ii, ji)
    sch.compute_at(blk, jo)
    _annotate(sch, ji, "serial" if inner == "parallel" else inner)
    lowered = lower(sch.mod)
    check_lowered(lowered)
    x = np.random.rand(m, 5).astype("float32")
    w = np.random.rand(5, n).astype("float32")
    y = np.full((m, n), np.nan, "float32")
    eval_prim_func(lowered, x, w, y)
    np.testing.assert_allclose(y, x @ w, rtol=1e-4, atol=1e-5)
