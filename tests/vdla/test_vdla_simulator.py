"""The simulator: cycle counts worked out by hand, tokens, deadlocks, races, bad programs."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from mlc import vdla
from mlc.errors import (
    MLCError,
    VDLAAccessError,
    VDLADeadlockError,
    VDLAProgramError,
    VDLARaceError,
)
from mlc.vdla import (
    DRAM,
    Alu,
    AluOp,
    Finish,
    Gemm,
    Load,
    Module,
    Program,
    ProgramBuilder,
    Store,
    UOp,
    acc_buffer,
    inp_buffer,
    simulate,
    wgt_buffer,
)

# a slow, simple machine whose costs are easy to add up by hand
CFG = vdla.VDLAConfig(dram_bytes_per_cycle=8, dram_latency=10)


def _dram(m_tiles: int = 4) -> tuple[DRAM, int, int, int]:
    dram = DRAM()
    rng = np.random.default_rng(0)
    a = dram.put("A", rng.integers(-128, 128, (m_tiles, 8, 8), dtype=np.int8))
    w = dram.put("W", rng.integers(-128, 128, (4, 8, 8), dtype=np.int8))
    c = dram.alloc("C", m_tiles * 256)
    return dram, a.tile(inp_buffer, CFG), w.tile(wgt_buffer, CFG), c.out_tile(256)


def _one_tile_program(a: int, w: int, c: int, **drop: bool) -> Program:
    """LOAD two input tiles and one weight tile, GEMM, STORE, with every token needed.
    ``drop`` names flags to leave out, by instruction: ``{"gemm_pop_prev": False}``."""
    def f(name: str, flag: str) -> bool:
        return drop.get(f"{name}_{flag}", True)

    b = ProgramBuilder(CFG)
    b.load_uops(0, b.uop_kernel([UOp(0, 0, 0)]), 1)                    # 0x00 EX: 10+1
    b.load(inp_buffer, 0, a, 1, 2)                                       # 0x01 LD: 10+16
    b.load(wgt_buffer, 0, w, 1, 1, push_next=f("wgt", "push_next"))      # 0x02 LD: 10+8
    b.gemm(0, 1, lp0=2, acc_factor=(1, 0), inp_factor=(1, 0),            # 0x03 EX: 2
           pop_prev=f("gemm", "pop_prev"), push_next=f("gemm", "push_next"))
    b.store(0, c, 1, 2, pop_prev=f("store", "pop_prev"),                 # 0x04 ST: 10+64
            push_prev=f("store", "push_prev"))
    b.emit(Finish(pop_next=f("finish", "pop_next")))                     # 0x05 EX: 1
    return Program(tuple(b.instructions), tuple(b.uops))


def test_cycle_count_of_a_serial_program_by_hand() -> None:
    dram, a, w, c = _dram()
    stats = simulate(_one_tile_program(a, w, c), dram, CFG)
    uop_load = 10 + 1                 # 4 bytes at 8 B/cycle, rounded up
    inp_load = 10 + 2 * 64 // 8       # two 64-byte tiles
    wgt_load = 10 + 64 // 8
    gemm = 2 * 1 * 1                  # lp0 * lp1 * uops
    store = 10 + 2 * 256 // 8         # two int32 tiles
    finish = 1
    gemm_start = max(uop_load, inp_load + wgt_load)      # waits for the LD->EX token
    assert stats.cycles == gemm_start + gemm + store + finish == 121
    ends = {e.index: (e.start, e.end) for e in stats.timeline}
    assert ends[0] == (0, 11) and ends[1] == (0, 26) and ends[2] == (26, 44)
    assert ends[3] == (44, 46) and ends[4] == (46, 120) and ends[5] == (120, 121)
    assert stats.busy == {Module.LOAD: 44, Module.COMPUTE: 11 + 2 + 1, Module.STORE: 74}
    assert stats.bytes_loaded == 4 + 128 + 64 and stats.bytes_stored == 512
    assert stats.gemm_cycles == 2 and stats.macs == 2 * 512
    assert stats.utilization == pytest.approx(2 / 121)
    assert [(t.queue, t.push_index, t.pop_index) for t in stats.tokens] == [
        ("LD->EX", 2, 3), ("EX->ST", 3, 4), ("ST->EX", 4, 5)]


def test_modules_overlap_when_tokens_allow_it() -> None:
    """Compute works on tile 0 while load brings tile 1: the two runs overlap."""
    dram, a, w, c = _dram()
    b = ProgramBuilder(CFG)
    b.load_uops(0, b.uop_kernel([UOp(0, 0, 0), UOp(1, 1, 0)]), 2)     # EX 0-11
    b.load(wgt_buffer, 0, w, 1, 1)                                      # LD 0-18
    b.load(inp_buffer, 0, a, 1, 1, push_next=True)                      # LD 18-36
    b.load(inp_buffer, 1, a + 1, 1, 1, push_next=True)                  # LD 36-54
    b.gemm(0, 1, lp0=1, lp1=20, pop_prev=True)                          # EX 36-56
    b.gemm(1, 2, lp0=1, lp1=20, pop_prev=True, push_next=True)          # EX 56-76
    b.store(0, c, 1, 2, pop_prev=True, push_prev=True)                  # ST 76-150
    stats = simulate(b.finish(pop_next=True), dram, CFG)
    assert stats.cycles == 151
    spans = {e.index: (e.start, e.end) for e in stats.timeline}
    assert spans[3] == (36, 54) and spans[4] == (36, 56)   # the second load under the GEMM


def test_results_do_not_depend_on_the_data_path() -> None:
    dram, a, w, c = _dram()
    simulate(_one_tile_program(a, w, c), dram, CFG)
    inp = dram.get("A", np.int8, (4, 8, 8))[:2].astype(np.int64)
    wgt = dram.get("W", np.int8, (4, 8, 8))[0].astype(np.int64)
    np.testing.assert_array_equal(dram.get("C", np.int32, (4, 8, 8))[:2], inp @ wgt.T)


# -- tokens ------------------------------------------------------------------------------


def test_a_missing_push_is_a_deadlock_naming_the_pop() -> None:
    dram, a, w, c = _dram()
    program = _one_tile_program(a, w, c, wgt_push_next=False)
    with pytest.raises(VDLADeadlockError, match=r"POP \(LD->EX\) of instruction 0x03 \(EXE"):
        simulate(program, dram, CFG)


def test_a_missing_pop_is_reported_naming_the_push() -> None:
    dram, a, w, c = _dram()
    program = _one_tile_program(a, w, c, finish_pop_next=False)
    with pytest.raises(VDLADeadlockError, match=r"instruction 0x04 \(STOR.*pushes a token "
                                                r"on ST->EX that no instruction pops"):
        simulate(program, dram, CFG)


def test_modules_waiting_on_each_other_is_a_deadlock() -> None:
    dram, a, w, c = _dram()
    b = ProgramBuilder(CFG)
    b.load(inp_buffer, 0, a, 1, 1, pop_next=True, push_next=True)    # waits for compute
    b.gemm(0, 0, pop_prev=True, push_prev=True)                       # waits for load
    program = Program(tuple(b.instructions) + (Finish(),), ())
    with pytest.raises(VDLADeadlockError) as err:
        simulate(program, dram, CFG)
    assert "0x00" in str(err.value) and "0x01" in str(err.value)


def test_a_missing_token_that_lets_modules_collide_is_a_race() -> None:
    """The second LOAD overwrites the tile the GEMM is still reading."""
    dram, a, w, c = _dram()
    b = ProgramBuilder(CFG)
    b.load_uops(0, b.uop_kernel([UOp(0, 0, 0)]), 1)
    b.load(wgt_buffer, 0, w, 1, 1)
    b.load(inp_buffer, 0, a, 1, 1, push_next=True)
    b.gemm(0, 1, lp0=1, lp1=100, acc_factor=(0, 0), pop_prev=True, push_next=True)
    b.load(inp_buffer, 0, a + 1, 1, 1)                  # should pop EX->LD first
    b.store(0, c, 1, 1, pop_prev=True, push_prev=True)
    with pytest.raises(VDLARaceError, match=r"race on ACTIV: instruction 0x03 \(EXE.*"
                                            r"instruction 0x04 \(LOAD"):
        simulate(b.finish(pop_next=True), dram, CFG)


# -- out of range ------------------------------------------------------------------------


def _with(program: Program, index: int, **fields: object) -> Program:
    instrs = list(program.instructions)
    instrs[index] = dataclasses.replace(instrs[index], **fields)  # type: ignore[arg-type]
    return Program(tuple(instrs), program.uops)


def test_out_of_range_accesses_name_the_instruction() -> None:
    dram, a, w, c = _dram()
    p = _one_tile_program(a, w, c)
    depth = CFG.depth(inp_buffer)
    cases = [
        (_with(p, 1, sram_base=depth - 1), r"0x01 .*writes ACTIV\[511, 513\).*512 entries"),
        (_with(p, 3, inp_factor=(-1, 0), lp0=2), r"0x03 .*reads ACTIV\[-1, 1\)"),
        (_with(p, 3, acc_factor=(10**6, 0)), r"0x03 .*writes ACCUM"),
        (_with(p, 4, sram_base=CFG.depth(acc_buffer)), r"0x04 .*ACCUM"),
        (_with(p, 1, dram_base=a + 3), r"0x01 .*region 'A'.*past its end"),
        (_with(p, 4, dram_base=10**9), r"0x04 .*no region"),
        (_with(p, 0, dram_base=1), r"0x00 .*micro-ops \[1, 2\).*has 1"),
        (_with(p, 3, uop_begin=5, uop_end=6), r"0x03 .*micro-op slot 5.*no earlier LOAD"),
        (_with(p, 1, y_size=10**12, x_size=10**12), r"0x01 .*writes ACTIV"),
    ]
    for program, pattern in cases:
        with pytest.raises(VDLAAccessError if "slot" not in pattern else VDLAProgramError,
                           match=pattern):
            simulate(program, dram, CFG)


# -- hostile programs ----------------------------------------------------------------------


def test_zero_sizes_are_one_cycle_nops() -> None:
    dram, a, w, c = _dram()
    b = ProgramBuilder(CFG)
    b.load(inp_buffer, 0, a, 0, 5, push_next=True)       # nothing to move
    b.gemm(0, 0, lp0=3, lp1=3, pop_prev=True, push_next=True)   # no micro-ops
    b.store(0, c, 4, 0, pop_prev=True, push_prev=True)
    program = b.finish(pop_next=True)
    stats = simulate(program, dram, CFG)
    assert stats.cycles == 4 and stats.bytes_loaded == stats.bytes_stored == 0
    assert str(program).count("NOP") == 3


def _tamper(ins: object, **fields: object) -> object:
    for name, value in fields.items():
        object.__setattr__(ins, name, value)
    return ins


TAMPERED = [
    (Load(scope=inp_buffer, sram_base=0, dram_base=0, y_size=1, x_size=1, x_stride=-1),
     "x_stride must be an int >= 0"),
    (Load(scope=inp_buffer, sram_base=-4, dram_base=0, y_size=1, x_size=1, x_stride=1),
     "sram_base"),
    (Load(scope="inp", sram_base=0, dram_base=0, y_size=1, x_size=1, x_stride=1),  # type: ignore[arg-type]
     "scope must be a vdla buffer"),
    (Load(scope=inp_buffer, sram_base=0, dram_base=0, y_size=1.5, x_size=1, x_stride=1),  # type: ignore[arg-type]
     "y_size"),
    (Load(scope=inp_buffer, sram_base=0, dram_base=0, y_size=1, x_size=1, x_stride=1,
          y_pad=(1, -1)), "y_pad"),
    (Load(scope=inp_buffer, sram_base=0, dram_base=0, y_size=0, x_size=1, x_stride=1,
          y_pad=(1, 0)), "size zero is a NOP"),
    (Load(scope=inp_buffer, sram_base=0, dram_base=0, y_size=1, x_size=1, x_stride=1,
          pop_prev=True), "pop_prev is set but the load module has no prev"),
    (Store(sram_base=0, dram_base=0, y_size=1, x_size=1, x_stride=1, push_next=True),
     "store module has no next"),
    (Store(sram_base=0, dram_base=0, y_size=1, x_size=1, x_stride=1, dtype="float32"),
     "dtype must be"),
    (_tamper(Gemm(uop_begin=0, uop_end=0, lp0=1, lp1=1), pop_prev=1), "pop_prev must be True"),
    (Gemm(uop_begin=2, uop_end=1, lp0=1, lp1=1), "uop_end < uop_begin"),
    (Gemm(uop_begin=0, uop_end=0, lp0=1, lp1=1, acc_factor=(1,)), "acc_factor"),  # type: ignore[arg-type]
    (Alu(op="MAX", uop_begin=0, uop_end=0, lp0=1, lp1=1), "op must be"),  # type: ignore[arg-type]
    (Alu(op=AluOp.SHR, uop_begin=0, uop_end=0, lp0=1, lp1=1, imm=40), "SHR shifts by 0..31"),
    (Alu(op=AluOp.ADD, uop_begin=0, uop_end=0, lp0=1, lp1=1, imm=2**40), "imm must be"),
    (_tamper(Finish(), tid="zero"), "tid must be"),
    ("LOAD", "not a VDLA instruction"),
]


@pytest.mark.parametrize("ins,message", TAMPERED)
def test_tampered_fields_are_typed_errors(ins: object, message: str) -> None:
    dram, *_ = _dram()
    program = Program((ins, Finish()), ())  # type: ignore[arg-type]
    with pytest.raises(VDLAProgramError, match=re.escape(message)):
        simulate(program, dram, CFG)


def test_programs_must_end_with_one_finish() -> None:
    dram, *_ = _dram()
    for program in (Program(()), Program((Finish(), Finish())),
                    Program((Gemm(uop_begin=0, uop_end=0, lp0=1, lp1=1),))):
        with pytest.raises(VDLAProgramError, match="FINISH"):
            simulate(program, dram, CFG)
    with pytest.raises(VDLAProgramError, match="not a UOp"):
        simulate(Program((Finish(),), (UOp(0, "a"),)), dram, CFG)  # type: ignore[arg-type]


def test_every_vdla_error_is_an_mlc_error() -> None:
    for cls in (VDLAAccessError, VDLADeadlockError, VDLAProgramError, VDLARaceError):
        assert issubclass(cls, MLCError)


def test_int32_accumulators_wrap_around() -> None:
    """(-128) * (-128) * 8 per micro-op, 16384 times into one tile: exactly 2**31, which an
    int32 accumulator holds as -2**31."""
    dram = DRAM()
    a = dram.put("A", np.full((1, 8, 8), -128, dtype=np.int8))
    w = dram.put("W", np.full((1, 8, 8), -128, dtype=np.int8))
    c = dram.alloc("C", 256)
    b = ProgramBuilder(CFG)
    b.load_uops(0, b.uop_kernel([UOp(0, 0, 0)]), 1)
    b.load(inp_buffer, 0, a.tile(inp_buffer, CFG), 1, 1)
    b.load(wgt_buffer, 0, w.tile(wgt_buffer, CFG), 1, 1, push_next=True)
    b.gemm(0, 1, lp0=128, lp1=128, pop_prev=True, push_next=True)    # all into acc[0]
    b.store(0, c.out_tile(256), 1, 1, pop_prev=True, push_prev=True)
    simulate(b.finish(pop_next=True), dram, CFG)
    assert (dram.get("C", np.int32, (8, 8)) == -(2**31)).all()


def test_printer_speaks_like_the_notes() -> None:
    dram, a, w, c = _dram()
    text = str(_one_tile_program(a, w, c))
    lines = text.splitlines()
    assert re.match(r"0x03: EXE \(ACTIV\[  0-  1\], PARAM\[  0-  0\], ACCUM\[  0-  1\]\)\s+"
                    r"// EX$", lines[5])
    assert lines[4].strip().startswith("POP (LD->EX)")
    assert lines[3].strip().startswith("PUSH(LD->EX)")
    assert any(line.startswith("0x04: STOR(ACCUM[  0-  1]") for line in lines)
    tagged = dataclasses.replace(_one_tile_program(a, w, c).instructions[3], tid=1)
    assert str(Program((tagged, Finish()), ())).splitlines()[1].endswith("// EX@TID1")
