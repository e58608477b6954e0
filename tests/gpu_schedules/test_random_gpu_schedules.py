"""Property: a GPU schedule the primitives accept computes on cuda-sim what numpy computes.

Hypothesis draws tiled matmul schedules in the shape of the MLC course's GPU chapter:
tiles that may not divide, blockIdx/threadIdx bindings (2D or fused), a "local" write cache,
"shared" or "local" read caches attached at the reduction's outer loop or at a thread loop,
their copy loops fused, split and bound to threads (cooperative fetching) or vectorized, and
decompose_reduction. A primitive may refuse with a ScheduleError (the schedule stops
there and is still checked); an accepted schedule whose result differs from numpy is a bug.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mlc
from mlc import te, tir
from mlc.errors import ScheduleError

M, N, K = 20, 24, 18

_rng = np.random.default_rng(0)
A_NP = _rng.standard_normal((M, K)).astype(np.float32)
B_NP = _rng.standard_normal((K, N)).astype(np.float32)


def matmul() -> tir.PrimFunc:
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


@st.composite
def gpu_schedules(draw: st.DrawFn) -> tir.Schedule:
    sch = tir.Schedule(matmul())
    c = sch.get_block("C")
    try:
        local_out = draw(st.booleans())
        c_local = sch.cache_write(c, 0, "local") if local_out else None
        i, j, k = sch.get_loops(c)
        ty, tx = draw(st.sampled_from([2, 4, 8])), draw(st.sampled_from([2, 4, 8]))
        ly, lx = draw(st.sampled_from([1, 2, 3])), draw(st.sampled_from([1, 2]))
        i0, i1, i2 = sch.split(i, [None, ty, ly])
        j0, j1, j2 = sch.split(j, [None, tx, lx])
        k0, k1 = sch.split(k, [None, draw(st.sampled_from([4, 5, 6, 18]))])
        sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
        if c_local is not None:
            sch.reverse_compute_at(c_local, j1)
        sch.bind(i0, "blockIdx.y")
        sch.bind(j0, "blockIdx.x")
        fused = draw(st.booleans())
        if fused:
            thread = sch.fuse(i1, j1)
            sch.bind(thread, "threadIdx.x")
            nthread = ty * tx
        else:
            sch.bind(i1, "threadIdx.y")
            sch.bind(j1, "threadIdx.x")
            thread, nthread = j1, tx
        for index in draw(st.sampled_from([[0], [1], [0, 1], []])):
            scope = draw(st.sampled_from(["shared", "shared", "local"]))
            cache = sch.cache_read(c, index, scope)
            sch.compute_at(cache, draw(st.sampled_from([k0, thread])))
            *_, a0, a1 = sch.get_loops(cache)
            how = draw(st.sampled_from(["bind", "bind_vector", "plain", "bind_outer"]))
            if how == "plain":
                continue
            inner = sch.fuse(a0, a1)
            if how == "bind":
                _, t = sch.split(inner, [None, nthread])
                sch.bind(t, "threadIdx.x")
            elif how == "bind_vector":
                _, t, v = sch.split(inner, [None, nthread, 2])
                sch.vectorize(v)
                sch.bind(t, "threadIdx.x")
            else:  # a thread count the student picked, maybe not the block's
                t, _ = sch.split(inner, [draw(st.sampled_from([2, 4, 16, 64])), None])
                sch.bind(t, "threadIdx.x")
        if draw(st.booleans()):
            sch.decompose_reduction(c, k0)
    except ScheduleError:
        pass  # refused: what was accepted so far must still be right
    return sch


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(gpu_schedules())
def test_random_gpu_schedule_matches_numpy(sch: tir.Schedule) -> None:
    try:
        f = mlc.build(sch.mod, target="cuda-sim")
    except mlc.errors.CodegenError as err:
        # not a kernel yet (e.g. refused before any bind): the error says what to bind
        assert "bind" in str(err) or "thread" in str(err), str(err)
        return
    c = np.full((M, N), np.nan, "float32")
    f(A_NP, B_NP, c)
    np.testing.assert_allclose(c, A_NP @ B_NP, rtol=1e-4, atol=1e-4)
