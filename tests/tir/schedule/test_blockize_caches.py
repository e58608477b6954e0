"""Blockize and caches compose (the MLC course's hardware chapter): caches, compute_at,
reverse_compute_at and decompose_reduction around a blockized block, with tagged scopes."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir


def blockized():
    A = te.placeholder((64, 64), name="A")
    B = te.placeholder((64, 64), name="B")
    k = te.reduce_axis((0, 64), name="k")
    C = te.compute((64, 64), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    i, j, kk = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, 16])
    j0, j1 = sch.split(j, [None, 16])
    k0, k1 = sch.split(kk, [None, 16])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    return sch, sch.blockize(i1), (i0, j0, k0)


def steps(name, sch, blk, loops):
    i0, j0, k0 = loops
    if name == "cache_write":
        sch.reverse_compute_at(sch.cache_write(blk, 0, "local.acc_buffer"), j0)
    elif name == "cache_read":
        sch.compute_at(sch.cache_read(blk, 0, "global.A_reg"), k0)
        sch.compute_at(sch.cache_read(blk, 1, "global.B_reg"), k0)
    elif name == "decompose_then_cache_write":
        sch.decompose_reduction(blk, k0)
        sch.reverse_compute_at(sch.cache_write(blk, 0, "local.acc_buffer"), j0)
    elif name == "all":
        sch.compute_at(sch.cache_read(blk, 0, "global.A_reg"), k0)
        sch.reverse_compute_at(sch.cache_write(blk, 0, "local.acc_buffer"), j0)
        sch.decompose_reduction(blk, k0)


@pytest.mark.parametrize("name", ["cache_write", "cache_read", "decompose_then_cache_write",
                                  "all"])
def test_caches_around_a_blockized_block(name):
    sch, blk, loops = blockized()
    steps(name, sch, blk, loops)
    text = str(sch.mod)
    assert "vi0" not in text.split("C_o")[0]  # the cache nests use the outer block's values
    f = mlc.build(sch.mod, target="llvm")
    rng = np.random.default_rng(0)
    x = rng.random((64, 64), dtype=np.float32)
    y = rng.random((64, 64), dtype=np.float32)
    z = np.full((64, 64), np.nan, "float32")
    f(x, y, z)
    np.testing.assert_allclose(z, x @ y, rtol=1e-5)
