"""tensorize: a tile's computation replaced by a registered tensor intrinsic."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
import mlc.testing
from mlc import te, tir
from mlc.errors import ScheduleError
from mlc.tir.tensor_intrin import gemm_func, register_cpu_gemm

RNG = np.random.default_rng(3)


def matmul(n: int = 64, transpose_b: bool = False, name: str = "C") -> tuple[list, te.Tensor]:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    if transpose_b:
        C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name=name)
    else:
        C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name=name)
    return [A, B, C], C


def tiled(transpose_b: bool = False, n: int = 64, t: int = 16) -> tuple[tir.Schedule, list]:
    tensors, _ = matmul(n, transpose_b)
    sch = tir.Schedule(te.create_prim_func(tensors))
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, t])
    j0, j1 = sch.split(j, factors=[None, t])
    k0, k1 = sch.split(k, factors=[None, t])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    return sch, [i0, j0, k0, i1, j1, k1]


def check(func: tir.PrimFunc, transpose_b: bool, n: int = 64) -> None:
    a, b = RNG.random((n, n), dtype="float32"), RNG.random((n, n), dtype="float32")
    want = a @ (b.T if transpose_b else b)
    c = np.full((n, n), 3.0, "float32")
    mlc.build(func, target="llvm")(a, b, c)
    np.testing.assert_allclose(c, want, rtol=1e-4)
    c2 = np.zeros((n, n), "float32")
    mlc.testing.eval_prim_func(func, a, b, c2)
    np.testing.assert_allclose(c2, want, rtol=1e-4)


def test_tensorize_seed_matmul_with_cpu_gemm() -> None:
    name = register_cpu_gemm(16, 16, 16, transpose_b=True)
    assert name == "gemm_16x16x16_cpu_tb"
    sch, loops = tiled(transpose_b=True)
    blk = sch.tensorize(loops[3], name)
    text = str(sch.mod)
    # the tensorized block of seed 004: it reads and writes 16x16 tiles
    assert "reads(A[vi0 * 16:vi0 * 16 + 16, vk0 * 16:vk0 * 16 + 16], " \
           "B[vj0 * 16:vj0 * 16 + 16, vk0 * 16:vk0 * 16 + 16])" in text
    assert "writes(C[vi0 * 16:vi0 * 16 + 16, vj0 * 16:vj0 * 16 + 16])" in text
    # ... and runs the micro-kernel on them
    assert "for k in unroll(16):" in text and "for j in vectorized(16):" in text
    assert "C[vi0 * 16 + vi_1, vj0 * 16 + vj_1] = C[vi0 * 16 + vi_1, vj0 * 16 + vj_1] + " \
           "A[vi0 * 16 + vi_1, vk0 * 16 + vk_1] * B[vj0 * 16 + vj_1, vk0 * 16 + vk_1]" in text
    assert sch.get(blk).name == "C_o"
    tir.verify_well_formed(sch.mod)
    check(sch.mod, transpose_b=True)


def test_tensorize_a_blockized_block() -> None:
    name = register_cpu_gemm(16, 16, 16)
    sch, loops = tiled()
    outer = sch.blockize(loops[3])
    assert sch.tensorize(outer, name) is not None
    check(sch.mod, transpose_b=False)


def test_tensorize_twice_in_one_program() -> None:
    """Each use gets its own loop variables and block names (the program stays well formed)."""
    name = register_cpu_gemm(16, 16, 16)
    A = te.placeholder((32, 32), name="A")
    B = te.placeholder((32, 32), name="B")
    k = te.reduce_axis((0, 32), name="k")
    C = te.compute((32, 32), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    k2 = te.reduce_axis((0, 32), name="k2")
    D = te.compute((32, 32), lambda i, j: te.sum(C[i, k2] * B[k2, j], axis=k2), name="D")
    sch = tir.Schedule(te.create_prim_func([A, B, D]))
    for blk in ("C", "D"):
        i, j, r = sch.get_loops(sch.get_block(blk))
        i0, i1 = sch.split(i, factors=[None, 16])
        j0, j1 = sch.split(j, factors=[None, 16])
        r0, r1 = sch.split(r, factors=[None, 16])
        sch.reorder(i0, j0, r0, i1, j1, r1)
        sch.tensorize(i1, name)
    tir.verify_well_formed(sch.mod)
    a, b = RNG.random((32, 32), dtype="float32"), RNG.random((32, 32), dtype="float32")
    d = np.zeros((32, 32), "float32")
    mlc.build(sch.mod, target="llvm")(a, b, d)
    np.testing.assert_allclose(d, a @ b @ b, rtol=1e-4)


def test_tensorize_mismatch_wrong_layout() -> None:
    name = register_cpu_gemm(16, 16, 16)  # B[k, j], but the program reads B[j, k]
    sch, loops = tiled(transpose_b=True)
    before = sch.mod
    with pytest.raises(ScheduleError) as err:
        sch.tensorize(loops[3], name)
    assert sch.mod is before  # refused: the loop was not left blockized
    msg = str(err.value)
    assert "does not match the description of tensor intrinsic 'gemm_16x16x16_cpu'" in msg
    assert "--- the description ---" in msg and "def gemm_16x16x16_cpu_desc" in msg
    assert 'with block("C_o")' in msg  # the block, as it is in the program


def test_tensorize_mismatch_wrong_tile_size() -> None:
    name = register_cpu_gemm(8, 8, 8)
    sch, loops = tiled()
    with pytest.raises(ScheduleError, match=r"loop 'i_1' runs over 0..\+16 but the "
                                            r"description's loop 'i' over 0..\+8"):
        sch.tensorize(loops[3], name)


def test_tensorize_mismatch_computation() -> None:
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] + B[k, j], axis=k), name="C")
    desc = te.create_prim_func([A, B, C])
    tir.TensorIntrin.register("add_reduce_16", desc, desc, override=True)
    sch, loops = tiled()
    with pytest.raises(ScheduleError, match="the computations differ"):
        sch.tensorize(loops[3], "add_reduce_16")


def test_tensorize_trace_replays_by_name() -> None:
    name = register_cpu_gemm(16, 16, 16)
    sch, loops = tiled()
    sch.tensorize(loops[3], name)
    data = sch.trace.as_json()
    assert data[-1][0] == "tensorize" and data[-1][1]["tensor_intrin"] == name
    tensors, _ = matmul()
    fresh = tir.Schedule(te.create_prim_func(tensors))
    tir.Trace.apply_json_to_schedule(data, fresh)
    check(fresh.mod, transpose_b=False)
    assert str(fresh.mod) == str(sch.mod)


def test_intrinsic_registry_errors() -> None:
    with pytest.raises(ScheduleError, match="there is no tensor intrinsic named 'nope'"):
        tir.TensorIntrin.get("nope")
    desc = gemm_func(16, 16, 16)
    with pytest.raises(ScheduleError, match="parameter A of desc is"):
        tir.TensorIntrin.register("bad_gemm", desc, gemm_func(8, 16, 16))
    tir.TensorIntrin.register("gemm_same", desc, desc)
    tir.TensorIntrin.register("gemm_same", gemm_func(16, 16, 16), desc)  # same: allowed
    with pytest.raises(ScheduleError, match="registered already"):
        tir.TensorIntrin.register("gemm_same", gemm_func(8, 8, 8), gemm_func(8, 8, 8))
    sch, loops = tiled()
    with pytest.raises(ScheduleError, match="must be the name of a registered TensorIntrin"):
        sch.tensorize(loops[3], 42)  # type: ignore[arg-type]
