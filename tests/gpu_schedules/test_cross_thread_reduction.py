"""Cross-thread reduction: a reduction loop bound to threadIdx.x (TVM's "Reduction"
tutorial) becomes a tree reduction (warp shuffles on the CUDA targets, shared memory
elsewhere); checked on cuda-sim against numpy. More in tests/gpu/test_warp_shuffle.py."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import ScheduleError

rng = np.random.default_rng(0)


def test_tvm_reduction_tutorial_rfactor_then_bind():
    n = te.var("n")
    m = te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    f = mlc.build(s, [A, B], target="cuda-sim")
    for rows, cols in [(64, 128), (70, 100), (3, 5)]:
        a = rng.random((rows, cols), dtype=np.float32)
        b = np.full(rows, np.nan, "float32")
        f(a, b)
        np.testing.assert_allclose(b, a.sum(1), rtol=1e-5)
    # 16 threads per row: each row is half a warp, reduced by shuffles of width 16
    src = f.get_source("cuda")
    assert "__shfl_down_sync(0xffffffffu, B_red[0], 8, 16);" in src
    assert "__syncthreads" not in src and "__shared__" not in src
    # a target without warp shuffles (mlc.lower's common passes) keeps the shared-memory tree
    shared = str(mlc.lower(s, [A, B]))
    assert 'B_red = alloc_buffer((512,), "float32", scope="shared")' in shared
    assert "tvm_warp_shuffle_down" not in shared


@pytest.mark.parametrize("threads", [32, 24])
@pytest.mark.parametrize("reducer", ["sum", "max"])
def test_bind_a_reduction_loop_to_threads(threads, reducer):
    rows, cols = 6, 100
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    op = te.sum if reducer == "sum" else te.max
    B = te.compute((rows,), lambda i: op(A[i, k], axis=k), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, kk = sch.get_loops(sch.get_block("B"))
    ko, ki = sch.split(kk, [None, threads])  # ko stays a serial loop outside the threads
    sch.bind(i, "blockIdx.x")
    sch.bind(ki, "threadIdx.x")
    f = mlc.build(sch.mod, target="cuda-sim")
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    b = np.full(rows, np.nan, "float32")
    f(a, b)
    ref = a.sum(1) if reducer == "sum" else a.max(1)
    np.testing.assert_allclose(b, ref, rtol=1e-5)


def test_reduction_loop_on_blocks_is_refused_with_what_works():
    A = te.placeholder((8, 64), name="A")
    k = te.reduce_axis((0, 64), "k")
    B = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    _, kk = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="Bind it to threadIdx.x instead") as err:
        sch.bind(kk, "blockIdx.x")
    assert "loop 'k'" in str(err.value)
