"""A cooperative copy split into threads x vector lanes wider than the tile (guarded by
``fused < tile``) still gets a shared buffer of the tile's size, not of threads x lanes."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from gpu_schedules.test_course_programs import blocking_with_shared
from mlc import te, tir
from mlc.target.gpu.split_host_device import kernels


def _matmul(n: int, tile: int, threads: tuple[int, int], lanes: int) -> tir.Schedule:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    c = sch.get_block("C")
    i, j, kk = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, tile])
    j0, j1 = sch.split(j, [None, tile])
    k0, k1 = sch.split(kk, [None, tile])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    for operand in (0, 1):
        cache = sch.cache_read(c, operand, "shared")
        sch.compute_at(cache, k0)
        fused = sch.fuse(*sch.get_loops(cache)[-2:])
        _, ty, tx, v = sch.split(fused, [None, threads[0], threads[1], lanes])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
        sch.vectorize(v)
    return sch


@pytest.mark.parametrize("lanes", [1, 4, 8])
def test_shared_tile_is_the_tile_not_threads_times_lanes(lanes: int) -> None:
    n, tile = 64, 8
    sch = _matmul(n, tile, (tile, tile), lanes)  # tile*tile*lanes >= tile*tile elements
    (kernel,) = kernels(mlc.lower(sch.mod, target="cuda-sim"))
    sizes = sorted(int(np.prod([int(d) for d in b.shape])) for b in kernel.shared)
    assert sizes == [tile * tile, tile * tile], sizes
    a = np.random.default_rng(0).random((n, n), dtype="float32")
    b = np.random.default_rng(1).random((n, n), dtype="float32")
    c = np.zeros((n, n), "float32")
    mlc.build(sch.mod, target="cuda-sim")(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def _course_matmul(n: int) -> tir.Schedule:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return blocking_with_shared(tir.Schedule(te.create_prim_func([A, B, C])), 2, 2, 8, 8, 8)


def _shared_sizes(sch: tir.Schedule) -> dict[str, int]:
    (kernel,) = kernels(mlc.lower(sch.mod, target="cuda-sim"))
    return {b.name: int(np.prod([int(d) for d in b.shape])) for b in kernel.shared}


def test_course_copy_with_more_threads_than_tile_rows_is_the_tile() -> None:
    # 64 threads x 4 lanes = 256 > 128 elements: the copy is guarded by
    # `f0 * 256 + t * 4 + v < 128`, so t < 32: A's tile is 16 x 8 (rows t // 2 < 16), B's is
    # 8 x 16 (rows t // 4 < 8), not 32 x 8 and 1032 x 16 (the whole k range of B)
    assert _shared_sizes(_course_matmul(1024)) == {"A_shared": 128, "B_shared": 128}


@pytest.mark.parametrize("n", [64, 128])
def test_course_copy_with_more_threads_than_tile_rows_computes_matmul(n: int) -> None:
    sch = _course_matmul(n)
    assert _shared_sizes(sch) == {"A_shared": 128, "B_shared": 128}
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    c = np.full((n, n), np.nan, "float32")
    mlc.build(sch.mod, target="cuda-sim")(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
