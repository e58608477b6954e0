# ruff: noqa: E501  (the expected program is printed code)
"""blockize: the loops under a loop and their block become one tensorized block."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
import mlc.testing
from mlc import te, tir
from mlc.errors import ScheduleError

RNG = np.random.default_rng(7)


def matmul_nt(n: int = 64) -> tir.PrimFunc:
    """Seed 004's matmul: C[i, j] = sum_k A[i, k] * B[j, k]."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def tiled(n: int = 64, t: int = 16, k_inside: bool = False) -> tuple[tir.Schedule, list]:
    sch = tir.Schedule(matmul_nt(n))
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, t])
    j0, j1 = sch.split(j, factors=[None, t])
    if k_inside:
        sch.reorder(i0, j0, i1, j1, k)
        return sch, [i0, j0, i1, j1, k]
    k0, k1 = sch.split(k, factors=[None, t])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    return sch, [i0, j0, k0, i1, j1, k1]


def run_both(func: tir.PrimFunc, n: int = 64) -> None:
    """The interpreter and the LLVM build both compute numpy's A @ B.T."""
    a, b = RNG.random((n, n), dtype="float32"), RNG.random((n, n), dtype="float32")
    c = np.zeros((n, n), "float32")
    mlc.testing.eval_prim_func(func, a, b, c)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-4)
    c2 = np.full((n, n), 7.0, "float32")  # garbage: the init must clear it
    mlc.build(func, target="llvm")(a, b, c2)
    np.testing.assert_allclose(c2, a @ b.T, rtol=1e-4)


EXPECTED = '''\
@prim_func
def main(A: Buffer((64, 64), "float32"), B: Buffer((64, 64), "float32"), C: Buffer((64, 64), "float32")):
    for i_0 in range(4):
        for j_0 in range(4):
            for k_0 in range(4):
                with block("C_o"):
                    vi0 = axis.spatial(4, i_0)
                    vj0 = axis.spatial(4, j_0)
                    vk0 = axis.reduce(4, k_0)
                    reads(A[vi0 * 16:vi0 * 16 + 16, vk0 * 16:vk0 * 16 + 16], B[vj0 * 16:vj0 * 16 + 16, vk0 * 16:vk0 * 16 + 16])
                    writes(C[vi0 * 16:vi0 * 16 + 16, vj0 * 16:vj0 * 16 + 16])
                    with init():
                        for i_1_init in range(16):
                            for j_1_init in range(16):
                                with block("C_init"):
                                    vi_init = axis.spatial(64, vi0 * 16 + i_1_init)
                                    vj_init = axis.spatial(64, vj0 * 16 + j_1_init)
                                    reads()
                                    writes(C[vi_init, vj_init])
                                    C[vi_init, vj_init] = 0.0
                    for i_1 in range(16):
                        for j_1 in range(16):
                            for k_1 in range(16):
                                with block("C"):
                                    vi = axis.spatial(64, vi0 * 16 + i_1)
                                    vj = axis.spatial(64, vj0 * 16 + j_1)
                                    vk = axis.reduce(64, vk0 * 16 + k_1)
                                    reads(A[vi, vk], B[vj, vk])
                                    writes(C[vi, vj])
                                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]'''


def test_blockize_matmul_tile_prints_like_the_seed() -> None:
    sch, loops = tiled()
    outer = sch.blockize(loops[3])
    assert str(sch.mod).strip() == EXPECTED
    assert sch.get(outer).name == "C_o"
    tir.verify_well_formed(sch.mod)
    run_both(sch.mod)


def test_blockize_handles_after() -> None:
    sch, loops = tiled()
    outer = sch.blockize(loops[3])
    # the inner block's loops stop at the outer block; the outer block has the tile loops
    inner_loops = sch.get_loops(sch.get_block("C"))
    assert [sch.get(lp).loop_var.name for lp in inner_loops] == ["i_1", "j_1", "k_1"]
    assert [sch.get(lp).loop_var.name for lp in sch.get_loops(outer)] == ["i_0", "j_0", "k_0"]
    # the old handles of the tile loops still work: schedule inside the tensorized block
    sch.unroll(loops[5])
    assert "for k_1 in unroll(16):" in str(sch.mod)
    run_both(sch.mod)


def test_blockize_with_the_whole_reduction_inside() -> None:
    sch, loops = tiled(k_inside=True)
    outer = sch.blockize(loops[2])
    block = sch.get(outer)
    assert [iv.kind.name for iv in block.iter_vars] == ["SPATIAL", "SPATIAL"]
    assert block.init is not None  # the tile is zeroed, then fully reduced
    assert "reads(A[vi0 * 16:vi0 * 16 + 16, 0:64], B[vj0 * 16:vj0 * 16 + 16, 0:64])" in str(
        sch.mod)
    run_both(sch.mod)


def test_blockize_elementwise_one_loop() -> None:
    A = te.placeholder((8, 32), name="A")
    B = te.compute((8, 32), lambda i, j: A[i, j] * 2.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, j = sch.get_loops(sch.get_block("B"))
    _, j1 = sch.split(j, factors=[None, 8])
    outer = sch.blockize(j1)
    text = str(sch.mod)
    assert "vi0 = axis.spatial(8, i)" in text
    assert "vj0 = axis.spatial(4, j_0)" in text
    assert "reads(A[vi0, vj0 * 8:vj0 * 8 + 8])" in text
    assert "writes(B[vi0, vj0 * 8:vj0 * 8 + 8])" in text
    assert sch.get(outer).init is None
    a = RNG.random((8, 32), dtype="float32")
    b = np.zeros_like(a)
    mlc.testing.eval_prim_func(sch.mod, a, b)
    np.testing.assert_allclose(b, a * 2)


def test_blockize_refuses_a_fused_binding() -> None:
    A = te.placeholder((6, 8), name="A")
    B = te.compute((6, 8), lambda i, j: A[i, j] + 1.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, j = sch.get_loops(sch.get_block("B"))
    f = sch.fuse(i, j)
    _, f1 = sch.split(f, factors=[None, 12])  # rows of 8 cut into tiles of 12: no tile shape
    with pytest.raises(ScheduleError, match=r"not separable at loop 'i_j_fused_1'"):
        sch.blockize(f1)


def test_blockize_of_a_fused_loop_that_splits_cleanly() -> None:
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, j = sch.get_loops(sch.get_block("B"))
    _, f1 = sch.split(sch.fuse(i, j), factors=[None, 16])  # two whole rows per tile
    sch.blockize(f1)
    assert "reads(A[vi0 * 2:vi0 * 2 + 2, 0:8])" in str(sch.mod)
    a = RNG.random((8, 8), dtype="float32")
    b = np.zeros_like(a)
    mlc.testing.eval_prim_func(sch.mod, a, b)
    np.testing.assert_allclose(b, a + 1)


def test_blockize_refuses_a_predicate() -> None:
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] + 1.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops(sch.get_block("B"))
    _, i1 = sch.split(i, factors=[None, 4])
    with pytest.raises(ScheduleError, match="has a predicate"):
        sch.blockize(i1)


def test_blockize_refuses_two_blocks() -> None:
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((8,), lambda i: B[i] + 1.0, name="C")
    sch = tir.Schedule(te.create_prim_func([A, C]))
    (i,) = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), i)
    with pytest.raises(ScheduleError, match="must end in exactly one block"):
        sch.blockize(i)


def test_blockize_trace_replays() -> None:
    sch, loops = tiled()
    sch.blockize(loops[3])
    data = sch.trace.as_json()
    assert data[-1][0] == "blockize"
    fresh = tir.Schedule(matmul_nt())
    tir.Trace.apply_json_to_schedule(data, fresh)
    tir.assert_structural_equal(fresh.mod, sch.mod)
