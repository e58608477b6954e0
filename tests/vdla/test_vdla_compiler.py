"""The compiler path: a te schedule built with target="vdla" runs on the simulator."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, vdla
from mlc.errors import LoweringError
from mlc.target import backend
from mlc.vdla import schedules


def gemm_schedule(m: int, n: int, k: int, block: int = 16, kblock: int | None = None,
                  threads: int = 1, tensorize: bool = True
                  ) -> tuple[te.Schedule, list[te.Tensor]]:
    """The notes' schedule (mlc.vdla.schedules.gemm_schedule) with these tests' small tiles."""
    return schedules.gemm_schedule(m, n, k, block, kblock, threads, tensorize)


def run(s: te.Schedule, args: list[te.Tensor], seed: int = 0
        ) -> tuple[np.ndarray, np.ndarray, vdla.Stats, object]:
    rng = np.random.default_rng(seed)
    (m, k), (n, _) = (tuple(int(d.value) for d in t.shape) for t in args[:2])
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (n, k), dtype=np.int8)
    c = np.zeros((m, n), "int32")
    f = mlc.build(s, args, target="vdla")
    stats = f(a, b, c)
    return c, a.astype("int32") @ b.astype("int32").T, stats, f


@pytest.mark.parametrize("shape,block,threads", [((16, 16, 16), 8, 1), ((32, 24, 40), 8, 1),
                                                 ((64, 32, 32), 16, 2), ((32, 64, 16), 16, 1)])
def test_gemm_matches_numpy(shape: tuple[int, int, int], block: int, threads: int) -> None:
    m, n, k = shape
    s, args = gemm_schedule(m, n, k, block=block, kblock=8, threads=threads)
    c, ref, stats, f = run(s, args)
    np.testing.assert_array_equal(c, ref)
    assert f.stats is stats and stats.macs == m * n * k


def test_the_backend_lists_its_passes() -> None:
    be = backend("vdla")
    assert [n for n, _ in be.passes] == ["allocate_sram", "lower_dma_copies",
                                         "lower_tensor_intrins", "lower_alu",
                                         "inject_virtual_threads"]
    assert [n for n, _ in be.common_passes or ()] == ["check_bounds", "decompose_acc_init",
                                                      "lower_blocks"]


def test_lowered_program_reads_like_the_notes() -> None:
    s, args = gemm_schedule(16, 16, 16, block=16, kblock=8)
    text = str(mlc.lower(s, args, target="vdla"))
    assert "vdla.fill_zero(access_ptr(C_local_acc_buffer[0, 0], \"w\"), 16, 16)" in text
    assert ('vdla.dma_copy2d(access_ptr(A_local_inp_buffer[0, 0], "w"), '
            'access_ptr(A[ax0_0 * 16, k_0 * 8], "r"), 16, 8)') in text
    assert ('vdla.dma_copy2d(access_ptr(C[ax0_0 * 16, ax1_0 * 16], "w"), '
            'access_ptr(C_local_acc_buffer[0, 0], "r"), 16, 16)') in text
    assert 'annotations={"vdla.uop_loop": 1}' in text and "vdla.gemm(" in text


def test_instruction_stream_of_a_small_gemm() -> None:
    s, args = gemm_schedule(8, 8, 16, block=8, kblock=8)
    f = mlc.build(s, args, target="vdla")
    lines = [ln.split("//")[0].rstrip() for ln in f.get_source().splitlines()]
    # A (8x16 int8) is DRAM tiles 0-1, B tiles 4-5 (regions are 256-byte aligned), C is
    # int32 tile 2; the zeroing and the GEMM share one micro-op (dst 0, src 0, wgt 0)
    # A (8x16 int8) is DRAM tiles 0-1, B tiles 4-5 (regions are 256-byte aligned), C is
    # int32 tile 2; the zeroing and the GEMM share one micro-op (dst 0, src 0, wgt 0)
    assert lines == [
        '0x00: LOAD(UOP  [  0-  0], table 0: 1x1)',
        '0x01: ZERO(ACCUM[  0-  0])',
        '0x02: LOAD(PARAM[  0-  0], dram 4: 1x1)',
        '0x03: LOAD(ACTIV[  0-  0], dram 0: 1x1)',
        '      PUSH(LD->EX)',
        '      POP (LD->EX)',
        '0x04: EXE (ACTIV[  0-  0], PARAM[  0-  0], ACCUM[  0-  0])',
        '      PUSH(EX->LD)',
        '      POP (EX->LD)',
        '0x05: LOAD(PARAM[  0-  0], dram 5: 1x1)',
        '0x06: LOAD(ACTIV[  0-  0], dram 1: 1x1)',
        '      PUSH(LD->EX)',
        '      POP (LD->EX)',
        '0x07: EXE (ACTIV[  0-  0], PARAM[  0-  0], ACCUM[  0-  0])',
        '      PUSH(EX->ST)',
        '      POP (EX->ST)',
        '0x08: STOR(ACCUM[  0-  0], dram 2: 1x1, int32)',
        '      PUSH(ST->EX)',
        '      POP (ST->EX)',
        '0x09: FINISH',
    ]


def test_virtual_threads_hide_latency_through_the_compiler() -> None:
    s1, args1 = gemm_schedule(128, 128, 128, block=32, kblock=32, threads=1)
    s2, args2 = gemm_schedule(128, 128, 128, block=32, kblock=32, threads=2)
    c1, ref, one, _ = run(s1, args1)
    c2, _, two, f2 = run(s2, args2)
    np.testing.assert_array_equal(c1, ref)
    np.testing.assert_array_equal(c2, ref)
    assert two.cycles < 0.85 * one.cycles
    assert two.utilization > one.utilization
    assert "@TID1" in f2.get_source()


def test_untensorized_compute_in_acc_buffer_is_refused() -> None:
    s, args = gemm_schedule(16, 16, 16, block=8, kblock=8, tensorize=False)
    with pytest.raises(LoweringError, match=r"writes 'C_local_acc_buffer' \(acc_buffer\) "
                                            r"element by element.*tensorize its 8x8x8 tile"):
        mlc.build(s, args, target="vdla")


def test_a_cache_larger_than_the_sram_is_refused() -> None:
    s, args = gemm_schedule(256, 256, 256, block=256, kblock=256)
    with pytest.raises(LoweringError, match=r"on-chip buffer 'C_local_acc_buffer' needs 1024 "
                                            r"tiles of local.acc_buffer.*only 512 of its 512"
                                            r".*Cache a smaller tile"):
        mlc.build(s, args, target="vdla")


def test_a_shape_that_is_not_whole_tiles_is_refused() -> None:
    s, args = gemm_schedule(20, 16, 16, block=4, kblock=8, tensorize=False)
    with pytest.raises(LoweringError, match=r"has shape \(20, 16\), but the DMA moves whole "
                                            r"8x8 tiles: dimension 0 \(20\) is not a multiple "
                                            r"of 8. Pad the tensor"):
        mlc.build(s, args, target="vdla")


def test_virtual_threads_interleave_step_by_step_with_a_buffer_copy_each() -> None:
    s, args = gemm_schedule(32, 16, 16, block=16, kblock=8, threads=2)
    text = str(mlc.lower(s, args, target="vdla"))
    # one allocation per cache, twice the rows (a copy per thread) ...
    assert 'A_local_inp_buffer = alloc_buffer((32, 8), "int8"' in text
    # ... and in each step of k_0, thread 0's loads and GEMM, then thread 1's
    step = text[text.index("for k_0 in range(2):"):]
    order = [(line.split("(")[0].strip(), line.rsplit('"tid=', 1)[1][0])
             for line in step.splitlines() if '"tid=' in line][:6]
    assert order == [("vdla.dma_copy2d", "0"), ("vdla.dma_copy2d", "0"), ("vdla.gemm", "0"),
                     ("vdla.dma_copy2d", "1"), ("vdla.dma_copy2d", "1"), ("vdla.gemm", "1")]
    assert "A_local_inp_buffer[16, 0]" in text  # thread 1's half
