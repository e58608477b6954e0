"""VDLA, the course's teaching accelerator: a TPU-like machine simulated in numpy.

The notes' code reads as written::

    from mlc import vdla
    vdla.inp_buffer, vdla.wgt_buffer, vdla.acc_buffer     # on-chip buffers (scopes)
    c, stats, program = vdla.gemm(a, w, virtual_threads=2)  # the kernel library (also conv2d)
    print(program)                                         # 0x05: EXE (ACTIV[...], ...)
    stats = vdla.simulate(program, dram)                   # exact numbers and cycles
                                                           # (hand-written: vdla.ProgramBuilder)

Parts, in the order a program meets them: ``config`` (the machine), ``isa`` (instructions
and micro-ops), ``builder`` (writing programs by hand), ``verify`` (checks and footprints),
``printer``, ``simulator`` (timing, tokens, races) and ``execute`` (the arithmetic),
``deps`` (inserting dependency tokens), ``gemm`` and ``conv`` (the hand-written kernel
library that the compiler's lowering for ``target="vdla"`` must reproduce).
"""

from mlc.vdla.builder import ProgramBuilder, assemble
from mlc.vdla.config import (
    DEFAULT,
    MemScope,
    VDLAConfig,
    acc_buffer,
    inp_buffer,
    uop_buffer,
    wgt_buffer,
)
from mlc.vdla.conv import ConvTiling, conv2d
from mlc.vdla.deps import insert_dependencies
from mlc.vdla.dram import DRAM, Region
from mlc.vdla.gemm import GemmTiling, gemm, gemm_program
from mlc.vdla.intrin import declare_gemm, gemm8x8
from mlc.vdla.isa import (
    Alu,
    AluOp,
    Finish,
    Gemm,
    Instruction,
    Load,
    Module,
    Opcode,
    Program,
    Store,
    UOp,
)
from mlc.vdla.printer import disasm
from mlc.vdla.simulator import Event, Stats, TokenEvent, simulate

__all__ = [
    "ProgramBuilder", "assemble", "DEFAULT", "MemScope", "VDLAConfig", "acc_buffer",
    "inp_buffer", "uop_buffer", "wgt_buffer", "DRAM", "Region", "Alu", "AluOp", "Finish",
    "Gemm", "Instruction", "Load", "Module", "Opcode", "Program", "Store", "UOp", "disasm",
    "Event", "Stats", "TokenEvent", "simulate", "ConvTiling", "conv2d", "insert_dependencies",
    "GemmTiling", "gemm", "gemm_program", "declare_gemm", "gemm8x8",
]
