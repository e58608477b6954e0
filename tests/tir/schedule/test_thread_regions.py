"""Regions at thread level: a cache attached under a loop bound to threadIdx covers what all
the threads of the block need (TVM's cooperative fetching), and bindings that would run an
iteration twice at once or never are refused."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import ScheduleError

rng = np.random.default_rng(0)


def stencil_schedule() -> tuple[tir.Schedule, tir.schedule.trace.BlockRV]:
    A = te.placeholder((1027,), name="A")
    B = te.compute((1024,), lambda i: A[i] + A[i + 1] + A[i + 2], name="C")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    c = sch.get_block("C")
    (i,) = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 128])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    s = sch.cache_read(c, 0, "shared")
    sch.compute_at(s, i1)
    return sch, s


def run_stencil(sch: tir.Schedule) -> None:
    f = mlc.build(sch.mod, target="cuda-sim")
    a = rng.random(1027, dtype=np.float32)
    c = np.full(1024, np.nan, "float32")
    f(a, c)
    np.testing.assert_allclose(c, a[:1024] + a[1:1025] + a[2:1026], rtol=1e-6)


def test_shared_cache_under_thread_loop_covers_the_thread_block():
    sch, s = stencil_schedule()
    (ax0,) = sch.get_loops(s)[2:]
    assert sch.get(ax0).extent.value == 130  # 128 threads read A[bx*128 : bx*128 + 130]
    run_stencil(sch)


def test_issue_18_reproducer_cooperative_copy():
    sch, s = stencil_schedule()
    _, t = sch.split(sch.get_loops(s)[-1], [None, 128])
    sch.bind(t, "threadIdx.x")
    run_stencil(sch)
    f = mlc.build(sch.mod, target="cuda-sim")
    src = f.get_source("cuda")
    assert "__syncthreads()" in src
    assert "__shared__ float A_shared[130];" in src


def test_local_cache_stays_per_thread():
    A = te.placeholder((1027,), name="A")
    B = te.compute((1024,), lambda i: A[i] + A[i + 1] + A[i + 2], name="C")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    c = sch.get_block("C")
    (i,) = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 128])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    s = sch.cache_read(c, 0, "local")
    sch.compute_at(s, i1)
    assert sch.get(sch.get_loops(s)[-1]).extent.value == 3
    run_stencil(sch)


def test_binding_beyond_the_launched_threads_is_refused():
    sch, s = stencil_schedule()
    _, t = sch.split(sch.get_loops(s)[-1], [None, 256])
    with pytest.raises(ScheduleError, match=r"iterations 128\.\.255 of 'ax0_1' would never run"):
        sch.bind(t, "threadIdx.x")


def test_two_nested_loops_on_one_thread_axis_are_refused():
    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, j = sch.get_loops(sch.get_block("B"))
    sch.bind(i, "threadIdx.x")
    with pytest.raises(ScheduleError, match="uses both 'i' and 'j', which are bound to the same"):
        sch.bind(j, "threadIdx.x")


def test_shared_reduction_under_an_unused_thread_loop_is_refused():
    A = te.placeholder((64, 64), name="A")
    k = te.reduce_axis((0, 64), name="k")
    S = te.compute((64,), lambda i: te.sum(A[i, k], axis=k), name="S")
    C = te.compute((64,), lambda i: S[i] + 1.0, name="C")
    sch = tir.Schedule(te.create_prim_func([A, C]))
    (i,) = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, 16])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    sch.set_scope(sch.get_block("S"), 0, "shared")
    with pytest.raises(ScheduleError, match="every thread would update the same elements"):
        sch.compute_at(sch.get_block("S"), i1)
    # the same in per-thread memory is fine: each thread sums its own row
    sch.set_scope(sch.get_block("S"), 0, "local")
    sch.compute_at(sch.get_block("S"), i1)
    f = mlc.build(sch.mod, target="cuda-sim")
    a = rng.random((64, 64), dtype=np.float32)
    c = np.zeros(64, "float32")
    f(a, c)
    np.testing.assert_allclose(c, a.sum(1) + 1, rtol=1e-5)


def test_binding_the_copy_of_a_local_cache_to_threads_is_refused():
    """Found by the random GPU schedules: a "local" cache is per thread, so a copy loop
    bound to threadIdx.x would fill only a share of each thread's copy."""
    A = te.placeholder((1027,), name="A")
    B = te.compute((1024,), lambda i: A[i] + A[i + 1] + A[i + 2], name="C")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    c = sch.get_block("C")
    (i,) = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 128])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    s = sch.cache_read(c, 0, "local")
    sch.compute_at(s, i1)
    with pytest.raises(ScheduleError, match="'A_local', a 'local' buffer each threadIdx has its"):
        sch.bind(sch.get_loops(s)[-1], "threadIdx.x")
