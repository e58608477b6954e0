"""The VDLA instruction set: LOAD, GEMM, ALU, STORE, FINISH, each with four dependency flags.

A program is a list of instructions plus a table of micro-ops. A dispatcher sends each
instruction, in program order, to the command queue of the module that runs it:

=========================================  ==========  ==========================
instruction                                module      short name in the printer
=========================================  ==========  ==========================
LOAD of inp_buffer / wgt_buffer            load        LD
LOAD of acc_buffer / uop_buffer            compute     EX
GEMM, ALU, FINISH                          compute     EX
STORE (acc_buffer -> DRAM)                 store       ST
=========================================  ==========  ==========================

Each module runs its own queue in order, and the modules run *at the same time*. They
synchronise only through four token queues between neighbours: LD->EX, EX->LD, EX->ST and
ST->EX. Every instruction carries four flags:

* ``pop_prev`` / ``pop_next``: before starting, wait for (and take) a token from the
  previous / next module ("prev" of compute is load, "next" of compute is store);
* ``push_prev`` / ``push_next``: after finishing, give a token to the previous / next module.

So "compute may read the tile once the load has written it" is ``push_next`` on the LOAD and
``pop_prev`` on the GEMM; "load may overwrite the tile once compute has read it" is
``push_prev`` on the GEMM and ``pop_next`` on the next LOAD into that tile.

GEMM and ALU run a *micro-coded kernel*, the notes' two-level affine loop::

    for y in range(lp0):                 # "outer" loop
        for x in range(lp1):             # "inner" loop
            for u in uop_buffer[uop_begin:uop_end]:
                # GEMM:
                acc[a_acc*y + b_acc*x + u.dst] += GEVM(inp[a_inp*y + b_inp*x + u.src],
                                                       wgt[a_wgt*y + b_wgt*x + u.wgt])
                # ALU:
                acc[a_dst*y + b_dst*x + u.dst] = OP(acc[... u.dst], acc[a_src*y + b_src*x + u.src]
                                                     or imm)

where each index is a tile of the buffer and ``GEVM`` multiplies a BATCH x BLOCK_IN tile by
the transpose of a BLOCK_OUT x BLOCK_IN tile (``acc[b, o] += sum_i inp[b, i] * wgt[o, i]``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from mlc.vdla.config import MemScope


class Opcode(enum.Enum):
    """What an instruction does."""

    LOAD = "LOAD"
    STORE = "STORE"
    GEMM = "GEMM"
    ALU = "ALU"
    FINISH = "FINISH"


class Module(enum.Enum):
    """The three modules, in the order data flows through them."""

    LOAD = "LD"
    COMPUTE = "EX"
    STORE = "ST"

    @property
    def prev(self) -> Module | None:
        """The module before this one (load has none)."""
        return {Module.LOAD: None, Module.COMPUTE: Module.LOAD,
                Module.STORE: Module.COMPUTE}[self]

    @property
    def next(self) -> Module | None:
        """The module after this one (store has none)."""
        return {Module.LOAD: Module.COMPUTE, Module.COMPUTE: Module.STORE,
                Module.STORE: None}[self]


class AluOp(enum.Enum):
    """The ALU's element-wise int32 operations on accumulator tiles.

    ``dst = OP(dst, src)`` where ``src`` is another accumulator tile or an immediate:
    MIN/MAX (max-pool, ReLU as ``MAX imm 0``, clipping before a narrowing STORE),
    ADD/MUL (bias, batch-norm scale and shift), SHR (arithmetic shift right: requantize).
    ADD and MUL wrap around modulo 2**32 like the hardware; SHR by a negative amount or by
    32 or more is refused.
    """

    MIN = "MIN"
    MAX = "MAX"
    ADD = "ADD"
    MUL = "MUL"
    SHR = "SHR"


@dataclass(frozen=True)
class UOp:
    """A micro-op: the constant part of each tile index. GEMM uses all three
    (``acc[dst] += GEVM(inp[src], wgt[wgt])``); ALU uses ``dst`` and ``src``, both in
    acc_buffer."""

    dst: int
    src: int
    wgt: int = 0


@dataclass(frozen=True, kw_only=True)
class Instruction:
    """Fields every instruction has: the four dependency flags and, for printing only, the
    virtual thread that emitted it (``tid``)."""

    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False
    tid: int | None = None

    @property
    def opcode(self) -> Opcode:
        raise NotImplementedError

    @property
    def module(self) -> Module:
        """The module whose command queue runs this instruction."""
        return Module.COMPUTE


@dataclass(frozen=True, kw_only=True)
class Load(Instruction):
    """A 2-D DMA from DRAM into an on-chip buffer, with zero padding around it.

    Reads ``y_size`` rows of ``x_size`` tiles from DRAM, row ``r`` starting at tile
    ``dram_base + r * x_stride`` (addresses count tiles of the buffer's kind), and writes
    them to the buffer as a dense block of ``(y_pad[0] + y_size + y_pad[1])`` rows of
    ``(x_pad[0] + x_size + x_pad[1])`` tiles starting at ``sram_base``, the pad tiles zero.
    A LOAD of uop_buffer copies micro-ops from the program's micro-op table (``dram_base``
    is an index into it) and runs on the compute module, as does a LOAD of acc_buffer.
    A LOAD of size zero moves nothing: it is how a program spends a token on a module that
    has no other work (VTA's NOP)."""

    scope: MemScope
    sram_base: int
    dram_base: int
    y_size: int
    x_size: int
    x_stride: int
    y_pad: tuple[int, int] = (0, 0)
    x_pad: tuple[int, int] = (0, 0)

    @property
    def opcode(self) -> Opcode:
        return Opcode.LOAD

    @property
    def module(self) -> Module:
        if self.scope in (MemScope.INP, MemScope.WGT):
            return Module.LOAD
        return Module.COMPUTE

    @property
    def sram_rows(self) -> int:
        return self.y_pad[0] + self.y_size + self.y_pad[1]

    @property
    def sram_cols(self) -> int:
        return self.x_pad[0] + self.x_size + self.x_pad[1]


@dataclass(frozen=True, kw_only=True)
class Store(Instruction):
    """A 2-D DMA from acc_buffer to DRAM: ``y_size * x_size`` consecutive accumulator tiles
    from ``sram_base``, row ``r`` written at DRAM tile ``dram_base + r * x_stride``.
    ``dtype="int32"`` writes the accumulators; ``dtype="int8"`` writes their low 8 bits
    (two's complement wraparound: clip with ALU MIN/MAX first). DRAM addresses count tiles
    of the stored dtype."""

    sram_base: int
    dram_base: int
    y_size: int
    x_size: int
    x_stride: int
    dtype: str = "int32"

    @property
    def opcode(self) -> Opcode:
        return Opcode.STORE

    @property
    def module(self) -> Module:
        return Module.STORE


@dataclass(frozen=True, kw_only=True)
class Gemm(Instruction):
    """Run the micro-ops ``uop_buffer[uop_begin:uop_end]`` on the tensor core over the loop
    ``for y in range(lp0): for x in range(lp1)`` (see the module docstring). Each factor
    pair is ``(a, b)``: the index moves by ``a`` tiles per ``y`` and ``b`` per ``x``.
    ``reset=True`` writes zeros to the accumulator tiles instead (the notes' ``fill_zero``)."""

    uop_begin: int
    uop_end: int
    lp0: int
    lp1: int
    acc_factor: tuple[int, int] = (0, 0)
    inp_factor: tuple[int, int] = (0, 0)
    wgt_factor: tuple[int, int] = (0, 0)
    reset: bool = False

    @property
    def opcode(self) -> Opcode:
        return Opcode.GEMM


@dataclass(frozen=True, kw_only=True)
class Alu(Instruction):
    """Run ``acc[dst] = op(acc[dst], acc[src] or imm)`` for the micro-ops
    ``uop_buffer[uop_begin:uop_end]`` over the loop ``for y in range(lp0): for x in
    range(lp1)``; ``imm=None`` takes the second operand from ``acc[src]``."""

    op: AluOp
    uop_begin: int
    uop_end: int
    lp0: int
    lp1: int
    dst_factor: tuple[int, int] = (0, 0)
    src_factor: tuple[int, int] = (0, 0)
    imm: int | None = None

    @property
    def opcode(self) -> Opcode:
        return Opcode.ALU


@dataclass(frozen=True, kw_only=True)
class Finish(Instruction):
    """The end of the program: the compute module raises "done" for the host. It must be
    the last instruction; pop tokens on it to wait for the other modules."""

    @property
    def opcode(self) -> Opcode:
        return Opcode.FINISH


@dataclass(frozen=True)
class Program:
    """An instruction stream and the micro-op table its LOADs of uop_buffer read from.
    ``print(program)`` shows it in the notes' style (see :mod:`mlc.vdla.printer`)."""

    instructions: tuple[Instruction, ...]
    uops: tuple[UOp, ...] = field(default=())

    def __len__(self) -> int:
        return len(self.instructions)

    def __str__(self) -> str:
        from mlc.vdla.printer import disasm

        return disasm(self)

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(str(self))}</pre>"
