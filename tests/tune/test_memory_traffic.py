"""memory_traffic: the bytes a loop nest moves through a cache, for the roofline."""

from __future__ import annotations

from mlc import te, tir
from mlc.tune.features import flop_count, memory_traffic


def _matmul(n: int):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def test_a_nest_that_fits_moves_each_byte_once():
    func = _matmul(64)
    assert memory_traffic(func, cache_bytes=1 << 20) == 3 * 64 * 64 * 4
    assert flop_count(func) == 2 * 64**3


def test_a_small_cache_makes_the_naive_loop_reload_its_operands():
    func = _matmul(64)
    fits = memory_traffic(func, cache_bytes=1 << 20)
    small = memory_traffic(func, cache_bytes=4 << 10)
    assert small > 10 * fits


def test_tiling_moves_less_than_the_naive_loop_through_a_small_cache():
    sch = tir.Schedule(_matmul(64))
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 8])
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(io, jo, k, ii, ji)
    naive = memory_traffic(_matmul(64), cache_bytes=4 << 10)
    assert memory_traffic(sch.mod, cache_bytes=4 << 10) < naive


def test_local_buffers_move_nothing():
    sch = tir.Schedule(_matmul(64))
    blk = sch.get_block("C")
    i, j, k = sch.get_loops(blk)
    cw = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(cw, j)
    assert memory_traffic(sch.mod, cache_bytes=1 << 20) == 3 * 64 * 64 * 4
