"""Print a VDLA program the way the lecture notes do.

::

    0x00: LOAD(UOP  [  0- 16], table 0: 1x17)                          // EX
    0x01: LOAD(ACTIV[  0-255], dram 0: 16x16 stride 128)               // LD@TID0
    0x02: LOAD(PARAM[  0-255], dram 0: 16x16 stride 128)               // LD@TID0
          PUSH(LD->EX)                                                 // LD@TID0
          POP (LD->EX)                                                 // EX@TID0
    0x03: EXE (ACTIV[  0-255], PARAM[  0-255], ACCUM[  0-255])         // EX@TID0
          PUSH(EX->LD)                                                 // EX@TID0

Each line is one instruction, at its index; the token operations it carries print on their
own lines, pops above (they happen before the instruction starts) and pushes below (after
it ends). The comment says which module runs it and, for code from a virtual thread, which
thread (``EX@TID0``: the compute module, virtual thread 0). Buffer ranges are inclusive, as
in the notes; ``ACTIV`` is inp_buffer, ``PARAM`` wgt_buffer, ``ACCUM`` acc_buffer.
"""

from __future__ import annotations

from mlc.errors import VDLAError
from mlc.vdla.config import DEFAULT, MemScope, VDLAConfig
from mlc.vdla.isa import Alu, Finish, Gemm, Instruction, Load, Program, Store
from mlc.vdla.verify import Access, Info, analyze

COMMENT_COLUMN = 68


def _range(access: Access) -> str:
    return f"{access.scope.label:<5}[{access.lo:3d}-{access.hi - 1:3d}]"


def _dma(ins: Load | Store) -> str:
    text = f"dram {ins.dram_base}: {ins.y_size}x{ins.x_size}"
    if ins.y_size > 1 and ins.x_stride != ins.x_size:
        text += f" stride {ins.x_stride}"
    if isinstance(ins, Load) and (any(ins.y_pad) or any(ins.x_pad)):
        text += " pad {},{},{},{}".format(*ins.y_pad, *ins.x_pad)
    return text


def text(ins: Instruction, info: Info | None = None) -> str:
    """The instruction without its tokens: ``EXE (ACTIV[  0- 24], ...)``. With ``info``
    (from :func:`mlc.vdla.verify.analyze`) buffer ranges are exact; without, GEMM and ALU
    show their micro-op range and loop instead."""
    ranges = [_range(a) for a in info.accesses] if info is not None else None
    if isinstance(ins, Load):
        if ins.y_size * ins.x_size == 0:
            return "NOP "
        scope = ins.scope if isinstance(ins.scope, MemScope) else None
        where = ranges[0] if ranges else f"{scope.label if scope else '?'} @{ins.sram_base}"
        source = f"table {ins.dram_base}: {ins.y_size}x{ins.x_size}" \
            if scope is MemScope.UOP else _dma(ins)
        return f"LOAD({where}, {source})"
    if isinstance(ins, Store):
        if ins.y_size * ins.x_size == 0:
            return "NOP "
        where = ranges[0] if ranges else f"ACCUM @{ins.sram_base}"
        return f"STOR({where}, {_dma(ins)}, {ins.dtype})"
    if isinstance(ins, (Gemm, Alu)):
        if ranges is None:
            loop = f"uop[{ins.uop_begin}:{ins.uop_end}] over {ins.lp0}x{ins.lp1}"
            if isinstance(ins, Gemm):
                return f"{'ZERO' if ins.reset else 'EXE '}({loop})"
            return f"ALU ({getattr(ins.op, 'name', '?')} {loop})"
        if not ranges:
            return "NOP "
        if isinstance(ins, Gemm):
            if ins.reset:
                return f"ZERO({ranges[0]})"
            return f"EXE ({ranges[1]}, {ranges[2]}, {ranges[0]})"
        second = ranges[1] if ins.imm is None else f"imm {ins.imm}"
        return f"ALU ({ins.op.name} {ranges[0]}, {second})"
    if isinstance(ins, Finish):
        return "FINISH"
    return repr(ins)


def one_line(ins: Instruction, program: Program | None = None) -> str:
    """A short text for error messages (no footprint analysis needed)."""
    try:
        return text(ins)
    except Exception:  # a tampered instruction must still print something
        return repr(ins)


def _comment(ins: Instruction) -> str:
    try:
        module = ins.module.value
    except Exception:
        return "//"
    return f"// {module}@TID{ins.tid}" if ins.tid is not None else f"// {module}"


def _line(body: str, comment: str) -> str:
    return f"{body:<{COMMENT_COLUMN}} {comment}"


def token_lines(ins: Instruction) -> tuple[list[str], list[str]]:
    """The POP lines before and the PUSH lines after an instruction."""
    me = ins.module
    pops, pushes = [], []
    if ins.pop_prev and me.prev is not None:
        pops.append(f"POP ({me.prev.value}->{me.value})")
    if ins.pop_next and me.next is not None:
        pops.append(f"POP ({me.next.value}->{me.value})")
    if ins.push_prev and me.prev is not None:
        pushes.append(f"PUSH({me.value}->{me.prev.value})")
    if ins.push_next and me.next is not None:
        pushes.append(f"PUSH({me.value}->{me.next.value})")
    return pops, pushes


def disasm(program: Program, config: VDLAConfig = DEFAULT) -> str:
    """The whole program in the notes' style (see the module docstring)."""
    try:
        infos: list[Info] | None = analyze(program, config)
    except VDLAError:
        infos = None
    lines = []
    for i, ins in enumerate(program.instructions):
        comment = _comment(ins)
        try:
            pops, pushes = token_lines(ins)
            body = text(ins, infos[i] if infos is not None else None)
        except Exception:
            pops, pushes, body = [], [], repr(ins)
        lines += [_line(f"      {p}", comment) for p in pops]
        lines.append(_line(f"0x{i:02X}: {body}", comment))
        lines += [_line(f"      {p}", comment) for p in pushes]
    return "\n".join(lines)
