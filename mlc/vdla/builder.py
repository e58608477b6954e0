"""Write VDLA programs by hand.

::

    b = ProgramBuilder()
    gemm_kernel = b.uop_kernel([UOp(dst=0, src=0, wgt=0)])   # offset in the micro-op table
    b.load_uops(sram_base=0, table_offset=gemm_kernel, count=1)
    b.load(inp_buffer, sram_base=0, dram_base=a_tile, y_size=1, x_size=1)
    b.load(wgt_buffer, sram_base=0, dram_base=w_tile, y_size=1, x_size=1, push_next=True)
    b.gemm(uop_begin=0, uop_end=1, lp0=1, lp1=1, pop_prev=True, push_next=True)
    b.store(sram_base=0, dram_base=c_tile, y_size=1, x_size=1, pop_prev=True, push_prev=True)
    program = b.finish(pop_next=True)

Every method returns the index of the instruction it added (``finish`` returns the
:class:`~mlc.vdla.isa.Program`). Keyword flags are the four dependency flags and ``tid``.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlc.vdla.config import DEFAULT, MemScope, VDLAConfig
from mlc.vdla.isa import Alu, AluOp, Finish, Gemm, Instruction, Load, Program, Store, UOp
from mlc.vdla.verify import analyze


def assemble(instructions: Sequence[Instruction], uops: Sequence[UOp] = (),
             config: VDLAConfig = DEFAULT) -> Program:
    """A checked :class:`Program` from a list of instructions and a micro-op table (raises
    the same typed errors as the simulator's first step)."""
    program = Program(tuple(instructions), tuple(uops))
    analyze(program, config)
    return program


class ProgramBuilder:
    """Collects instructions and micro-ops; see the module docstring."""

    def __init__(self, config: VDLAConfig = DEFAULT) -> None:
        self.config = config
        self.instructions: list[Instruction] = []
        self.uops: list[UOp] = []

    def emit(self, ins: Instruction) -> int:
        """Append any instruction; returns its index."""
        self.instructions.append(ins)
        return len(self.instructions) - 1

    def uop_kernel(self, uops: Sequence[UOp]) -> int:
        """Add micro-ops to the program's table; returns the offset of the first."""
        offset = len(self.uops)
        self.uops.extend(uops)
        return offset

    def load_uops(self, sram_base: int, table_offset: int, count: int, **flags: bool | int
                  ) -> int:
        """Copy ``count`` micro-ops from the table into uop_buffer (runs on compute)."""
        return self.emit(Load(scope=MemScope.UOP, sram_base=sram_base, dram_base=table_offset,
                              y_size=1, x_size=count, x_stride=count, **flags))  # type: ignore[arg-type]

    def load(self, scope: MemScope, sram_base: int, dram_base: int, y_size: int, x_size: int,
             x_stride: int | None = None, y_pad: tuple[int, int] = (0, 0),
             x_pad: tuple[int, int] = (0, 0), **flags: bool | int) -> int:
        """A 2-D DMA into ``scope`` (``x_stride`` defaults to ``x_size``: dense rows)."""
        return self.emit(Load(scope=scope, sram_base=sram_base, dram_base=dram_base,
                              y_size=y_size, x_size=x_size,
                              x_stride=x_size if x_stride is None else x_stride,
                              y_pad=y_pad, x_pad=x_pad, **flags))  # type: ignore[arg-type]

    def store(self, sram_base: int, dram_base: int, y_size: int, x_size: int,
              x_stride: int | None = None, dtype: str = "int32", **flags: bool | int) -> int:
        """A 2-D DMA of accumulator tiles to DRAM."""
        return self.emit(Store(sram_base=sram_base, dram_base=dram_base, y_size=y_size,
                               x_size=x_size, x_stride=x_size if x_stride is None else x_stride,
                               dtype=dtype, **flags))  # type: ignore[arg-type]

    def gemm(self, uop_begin: int, uop_end: int, lp0: int = 1, lp1: int = 1,
             acc_factor: tuple[int, int] = (0, 0), inp_factor: tuple[int, int] = (0, 0),
             wgt_factor: tuple[int, int] = (0, 0), reset: bool = False,
             **flags: bool | int) -> int:
        """A GEMM over micro-op slots ``[uop_begin, uop_end)``."""
        return self.emit(Gemm(uop_begin=uop_begin, uop_end=uop_end, lp0=lp0, lp1=lp1,
                              acc_factor=acc_factor, inp_factor=inp_factor,
                              wgt_factor=wgt_factor, reset=reset, **flags))  # type: ignore[arg-type]

    def alu(self, op: AluOp, uop_begin: int, uop_end: int, lp0: int = 1, lp1: int = 1,
            dst_factor: tuple[int, int] = (0, 0), src_factor: tuple[int, int] = (0, 0),
            imm: int | None = None, **flags: bool | int) -> int:
        """An ALU instruction over micro-op slots ``[uop_begin, uop_end)``."""
        return self.emit(Alu(op=op, uop_begin=uop_begin, uop_end=uop_end, lp0=lp0, lp1=lp1,
                             dst_factor=dst_factor, src_factor=src_factor, imm=imm,
                             **flags))  # type: ignore[arg-type]

    def finish(self, **flags: bool | int) -> Program:
        """Append FINISH and return the checked program."""
        self.emit(Finish(**flags))  # type: ignore[arg-type]
        return assemble(self.instructions, self.uops, self.config)
