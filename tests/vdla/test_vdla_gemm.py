"""The dependency-insertion pass and the hand-written GEMM with one and two virtual threads."""

from __future__ import annotations

import numpy as np
import pytest

from mlc import vdla
from mlc.errors import VDLAProgramError
from mlc.vdla import Finish, Gemm, Load, Program, Store, UOp, acc_buffer, inp_buffer, wgt_buffer
from mlc.vdla.deps import insert_dependencies
from mlc.vdla.gemm import GemmTiling, gemm, gemm_program, pack, unpack


def _flags(program: Program) -> list[str]:
    names = ("pop_prev", "pop_next", "push_prev", "push_next")
    return [",".join(n for n in names if getattr(ins, n)) for ins in program.instructions]


def test_insert_dependencies_before_and_expected() -> None:
    def load(scope: vdla.MemScope, sram: int) -> Load:
        return Load(scope=scope, sram_base=sram, dram_base=0, y_size=1, x_size=1, x_stride=1)

    before = Program((
        load(vdla.uop_buffer, 0),
        load(inp_buffer, 0),
        load(wgt_buffer, 0),
        load(inp_buffer, 1),
        Gemm(uop_begin=0, uop_end=1, lp0=1, lp1=1),                        # inp[0]
        Gemm(uop_begin=0, uop_end=1, lp0=2, lp1=1, inp_factor=(1, 0)),     # inp[0..1]
        load(inp_buffer, 0),
        Store(sram_base=0, dram_base=0, y_size=1, x_size=1, x_stride=1),
        Finish(),
    ), (UOp(0, 0, 0),))
    assert _flags(insert_dependencies(before)) == [
        "",                                 # micro-ops: loaded by compute itself
        "",                                 # inp[0]: the GEMM waits for wgt[0], loaded later
        "push_next",                        # wgt[0]
        "push_next",                        # inp[1], which only the second GEMM reads
        "pop_prev",                         # GEMM 1 waits for the loads up to wgt[0]
        "pop_prev,push_prev,push_next",     # GEMM 2 waits for inp[1]; frees inp; acc ready
        "pop_next,push_next",               # overwrites inp[0]: waits for GEMM 2 only
        "pop_prev,push_prev",               # STORE reads acc[0] after GEMM 2
        "pop_prev,pop_next",                # FINISH waits for the last load and store
    ]


def test_insert_dependencies_is_idempotent_and_the_result_runs() -> None:
    program = gemm_program(4, 4, 6, 0, 0, 0, GemmTiling(2, 2, 3), virtual_threads=2)
    assert insert_dependencies(program) == program


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,tiling", [
    ((40, 24, 72), GemmTiling(2, 2, 3)),     # ragged blocks at every edge
    ((64, 64, 64), GemmTiling(4, 4, 4)),
    ((13, 5, 9), GemmTiling(1, 1, 1)),       # not whole tiles: padded, then cropped
    ((8, 8, 8), GemmTiling()),
])
def test_gemm_matches_numpy(threads: int, shape: tuple[int, int, int],
                            tiling: GemmTiling) -> None:
    m, n, k = shape
    rng = np.random.default_rng(m * n + k)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    c, stats, _ = gemm(a, w, tiling, threads)
    np.testing.assert_array_equal(c, a.astype(np.int64) @ w.T.astype(np.int64))
    tiles = -(-m // 8) * -(-n // 8) * -(-k // 8)
    assert stats.macs == tiles * 512 and stats.gemm_cycles == tiles
    assert stats.bytes_stored == -(-m // 8) * -(-n // 8) * 256


def test_gemm_extreme_int8_values_are_exact() -> None:
    a = np.full((16, 1024), -128, dtype=np.int8)
    w = np.full((8, 1024), -128, dtype=np.int8)
    c, _, _ = gemm(a, w, GemmTiling(2, 1, 16), 2)
    assert (c == 128 * 128 * 1024).all()


def test_two_virtual_threads_hide_the_load_latency() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (256, 256), dtype=np.int8)
    w = rng.integers(-128, 128, (256, 256), dtype=np.int8)
    _, one, p1 = gemm(a, w, GemmTiling(8, 8, 8), 1)
    _, two, p2 = gemm(a, w, GemmTiling(8, 8, 8), 2)
    assert one.macs == two.macs and len(p1) == len(p2)
    assert two.cycles < 0.8 * one.cycles
    assert two.utilization > one.utilization
    # thread 0's next LOAD waits for thread 0's GEMM, never for thread 1's
    tid = {i: ins.tid for i, ins in enumerate(p2.instructions)}
    ex_to_ld = [t for t in two.tokens if t.queue == "EX->LD"]
    assert ex_to_ld and all(tid[t.push_index] == tid[t.pop_index] for t in ex_to_ld)
    # and runs while the compute module works for thread 1
    spans = {e.index: e for e in two.timeline}
    overlaps = sum(
        1 for t in ex_to_ld
        if any(e.tid != tid[t.pop_index] and e.opcode is vdla.Opcode.GEMM
               and e.start < spans[t.pop_index].end and spans[t.pop_index].start < e.end
               for e in two.timeline))
    assert overlaps > len(ex_to_ld) // 2


def test_gemm_refuses_bad_requests() -> None:
    a = np.zeros((8, 8), dtype=np.int8)
    with pytest.raises(VDLAProgramError, match="int8 matrices"):
        gemm(a.astype(np.float32), a)
    with pytest.raises(VDLAProgramError, match="int8 matrices"):
        gemm(np.zeros((0, 8), dtype=np.int8), a)
    with pytest.raises(VDLAProgramError, match="virtual_threads must be 1 or 2"):
        gemm(a, a, virtual_threads=3)
    with pytest.raises(VDLAProgramError, match="use smaller tiles"):
        gemm(a, a, GemmTiling(32, 32, 32))
    with pytest.raises(VDLAProgramError, match="positive int"):
        gemm(a, a, GemmTiling(0, 1, 1))


def test_pack_and_unpack_are_inverse() -> None:
    x = np.arange(13 * 10, dtype=np.int32).reshape(13, 10)
    tiles = pack(x, 8, 8)
    assert tiles.shape == (2, 2, 8, 8) and tiles.flags.c_contiguous
    np.testing.assert_array_equal(tiles[0, 1], np.pad(x[:8, 8:], ((0, 0), (0, 6))))
    np.testing.assert_array_equal(unpack(tiles, x.shape), x)


def test_buffers_are_scopes() -> None:
    assert vdla.inp_buffer == "local.inp_buffer" and str(acc_buffer) == "local.acc_buffer"
    assert vdla.DEFAULT.depth(inp_buffer) == 512 and vdla.DEFAULT.peak_ops_per_cycle == 1024
