"""Pictures of GPU kernels from a real cuda-sim run: figures with the expected artists."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

import mlc
from mlc import te, tir
from mlc.errors import MLCError, RaceError
from mlc.target.gpu.split_host_device import split_host_device
from mlc.viz import gpu


def shared_matmul(n: int = 16, tile: int = 4) -> tir.Schedule:
    X = te.placeholder((n, n), name="X")
    W = te.placeholder((n, n), name="W")
    k = te.reduce_axis((0, n), name="k")
    Y = te.compute((n, n), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    sch = tir.Schedule(te.create_prim_func([X, W, Y]))
    blk = sch.get_block("Y")
    i, j, kk = sch.get_loops(blk)
    bi, ti = sch.split(i, factors=[None, tile])
    bj, tj = sch.split(j, factors=[None, tile])
    ko, _ = sch.split(kk, factors=[None, tile])
    sch.reorder(bi, bj, ko, ti, tj)
    for loop, axis in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (ti, "threadIdx.y"),
                       (tj, "threadIdx.x")):
        sch.bind(loop, axis)
    for index in (0, 1):
        copy = sch.cache_read(blk, index, "shared")
        sch.compute_at(copy, ko)
        rows, cols = sch.get_loops(copy)[-2:]
        sch.bind(rows, "threadIdx.y")
        sch.bind(cols, "threadIdx.x")
    return sch


def args(n: int = 16) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32),
            np.zeros((n, n), np.float32)]


@pytest.fixture(scope="module")
def rec() -> gpu.Recording:
    return gpu.record(mlc.build(shared_matmul().mod, target="cuda-sim"), *args())


def test_thread_accesses_of_a_shared_tile(rec: gpu.Recording) -> None:
    fig = gpu.thread_accesses(rec, "X_shared", block=(0, 0))
    assert isinstance(fig, Figure)
    ax0, ax1 = fig.axes[:2]
    assert len(ax0.images) == 1 and len(ax1.images) == 1
    assert "X_shared" in ax0.get_title() and "writes" in ax1.get_title()
    written = ax1.images[0].get_array()
    assert written.shape == (4, 4) and written.count() == 16   # every element written


def test_one_threads_global_reads(rec: gpu.Recording) -> None:
    fig = gpu.thread_accesses(rec, "Y", block=(1, 0), thread=(2, 3))
    writes = fig.axes[1].images[0].get_array()
    assert writes.shape == (16, 16) and writes.sum() == 1 and writes[3, 6]  # row 0*4+3, col 4+2


def test_barrier_timeline_has_one_column_per_interval(rec: gpu.Recording) -> None:
    fig = gpu.barrier_timeline(rec)
    ax = fig.axes[0]
    dashed = [ln for ln in ax.lines if ln.get_linestyle() == "--"]
    assert len(dashed) == 2 * 4 - 1        # 2 barriers per k-step, 4 k-steps
    assert len(ax.patches) > 0 and any("Y[" in t.get_text() for t in ax.get_yticklabels())


def test_warp_coalescing_counts_sectors() -> None:
    fig = gpu.warp_coalescing(np.arange(32) * 4)
    ax = fig.axes[0]
    assert len(ax.patches) == 4 and "4 sectors" in ax.get_title()
    fig = gpu.warp_coalescing(np.arange(32) * 128)
    assert len(fig.axes[0].patches) == 32 and "32 sectors" in fig.axes[0].get_title()


def test_warp_coalescing_from_a_recording(rec: gpu.Recording) -> None:
    fig = gpu.warp_coalescing(rec, "W")
    assert "load of W" in fig.axes[0].get_title()


def test_bank_conflicts_column_and_padded() -> None:
    fig = gpu.bank_conflicts(np.arange(32) * 32 * 4)
    assert "32 passes" in fig.axes[0].get_title() and "32-way" in fig.axes[0].get_title()
    fig = gpu.bank_conflicts(np.arange(32) * 33 * 4)
    assert "1 pass " in fig.axes[0].get_title()


def test_race_picture_shows_who_raced() -> None:
    racy = split_host_device(mlc.lower(shared_matmul().mod))
    with pytest.raises(RaceError) as info:
        mlc.target.cuda_sim.check(racy, *args())
    fig = gpu.race_picture(info.value)
    ax0, ax1 = fig.axes[:2]
    assert len(ax0.images) == 1 and len(ax1.images) == 1
    assert "race" in ax0.get_title() and ax1.texts + ax1.patches is not None
    assert len(ax0.collections) == 1      # the first raced element, circled


def test_bad_names_are_errors(rec: gpu.Recording) -> None:
    with pytest.raises(MLCError, match="X_shared"):
        gpu.thread_accesses(rec, "nope")
    with pytest.raises(MLCError, match="kernel"):
        rec.kernel("other")
