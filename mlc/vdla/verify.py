"""Check a program before it runs, and work out what each instruction touches and costs.

``analyze(program, config, dram)`` walks the instructions in order and returns one
:class:`Info` per instruction: the module that runs it, the tile ranges it reads and writes
in each on-chip buffer (its *footprint*), its DRAM bytes and its cycle cost. Every error a
program can have that does not depend on timing is found here, before anything runs, with
the instruction's index and text in the message:

* a field of the wrong type or sign (a negative stride, a flag that is not a bool);
* a dependency flag towards a module that does not exist (load has no "prev");
* a buffer range outside the buffer, a DRAM range outside its region;
* a GEMM or ALU that runs micro-op slots no LOAD has filled;
* a FINISH that is missing or not last.

Footprints are exact for the bounds (an affine index reaches its extremes at the loop's
corners) but cover the whole ``[lo, hi)`` range even where a strided kernel skips tiles.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlc.errors import VDLAAccessError, VDLAProgramError
from mlc.vdla.config import MemScope, VDLAConfig, check_config
from mlc.vdla.dram import DRAM
from mlc.vdla.isa import Alu, AluOp, Finish, Gemm, Instruction, Load, Module, Program, Store, UOp

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
MAX_LOOP = 2**14 - 1
"""The largest ``lp0`` / ``lp1`` of a GEMM or ALU (VTA's loop fields are 14 bits)."""
MAX_TRIPS = 2**18
"""The most micro-op steps (``lp0 * lp1 * micro-ops``) one instruction may run here."""


@dataclass(frozen=True)
class Access:
    """Tiles ``[lo, hi)`` of one buffer, read or written."""

    scope: MemScope
    lo: int
    hi: int
    write: bool


@dataclass(frozen=True)
class Info:
    """What the analysis knows about one instruction."""

    index: int
    module: Module
    accesses: tuple[Access, ...]
    cycles: int
    dram_bytes: int
    trips: int
    kernel: tuple[UOp, ...]


def where(index: int, ins: Instruction, program: Program | None = None) -> str:
    """``instruction 0x05 (EXE (...))``: how errors name an instruction."""
    from mlc.vdla.printer import one_line

    return f"instruction {index:#04x} ({one_line(ins, program)})"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_fields(index: int, ins: Instruction) -> None:
    def bad(msg: str) -> VDLAProgramError:
        return VDLAProgramError(f"instruction {index:#04x} ({type(ins).__name__}): {msg}")

    if not isinstance(ins, (Load, Store, Gemm, Alu, Finish)):
        raise VDLAProgramError(f"instruction {index:#04x} is {ins!r}, not a VDLA instruction "
                               "(Load, Store, Gemm, Alu or Finish)")
    for flag in ("pop_prev", "pop_next", "push_prev", "push_next"):
        if not isinstance(getattr(ins, flag), bool):
            raise bad(f"{flag} must be True or False, got {getattr(ins, flag)!r}")
    if ins.tid is not None and not _is_int(ins.tid):
        raise bad(f"tid must be an int or None, got {ins.tid!r}")
    names: tuple[str, ...] = ()
    pairs: tuple[str, ...] = ()
    if isinstance(ins, Load):
        if not isinstance(ins.scope, MemScope):
            raise bad(f"scope must be a vdla buffer (vdla.inp_buffer...), got {ins.scope!r}")
        names = ("sram_base", "dram_base", "y_size", "x_size", "x_stride")
        pairs = ("y_pad", "x_pad")
    elif isinstance(ins, Store):
        names = ("sram_base", "dram_base", "y_size", "x_size", "x_stride")
        if ins.dtype not in ("int8", "int32"):
            raise bad(f"dtype must be 'int8' or 'int32', got {ins.dtype!r}")
    elif isinstance(ins, (Gemm, Alu)):
        names = ("uop_begin", "uop_end", "lp0", "lp1")
        if isinstance(ins, Gemm) and not isinstance(ins.reset, bool):
            raise bad(f"reset must be True or False, got {ins.reset!r}")
    for name in names:
        value = getattr(ins, name)
        if not _is_int(value) or value < 0:
            raise bad(f"{name} must be an int >= 0, got {value!r}")
    for name in pairs:
        value = getattr(ins, name)
        if (not isinstance(value, tuple) or len(value) != 2
                or not all(_is_int(v) and v >= 0 for v in value)):
            raise bad(f"{name} must be a pair of ints >= 0, got {value!r}")
    factors = {"Gemm": ("acc_factor", "inp_factor", "wgt_factor"),
               "Alu": ("dst_factor", "src_factor")}.get(type(ins).__name__, ())
    for name in factors:
        value = getattr(ins, name)
        if not isinstance(value, tuple) or len(value) != 2 or not all(map(_is_int, value)):
            raise bad(f"{name} must be a pair of ints (tiles per y, tiles per x), "
                      f"got {value!r}")
    if isinstance(ins, Alu):
        if not isinstance(ins.op, AluOp):
            raise bad(f"op must be a vdla.AluOp, got {ins.op!r}")
        if ins.imm is not None:
            if not _is_int(ins.imm) or not INT32_MIN <= ins.imm <= INT32_MAX:
                raise bad(f"imm must be an int32 or None, got {ins.imm!r}")
            if ins.op is AluOp.SHR and not 0 <= ins.imm < 32:
                raise bad(f"SHR shifts by 0..31 bits, got {ins.imm}")
    for side, flags in (("prev", ("pop_prev", "push_prev")), ("next", ("pop_next", "push_next"))):
        neighbour = getattr(ins.module, side)
        for flag in flags:
            if neighbour is None and getattr(ins, flag):
                raise bad(f"{flag} is set but the {ins.module.name.lower()} module has no "
                          f"{side} module (the modules are load -> compute -> store)")


def _affine_range(cs: list[int], factor: tuple[int, int], lp0: int, lp1: int
                  ) -> tuple[int, int]:
    a, b = factor
    lo = min(cs) + min(0, a * (lp0 - 1)) + min(0, b * (lp1 - 1))
    hi = max(cs) + max(0, a * (lp0 - 1)) + max(0, b * (lp1 - 1)) + 1
    return lo, hi


def analyze(program: Program, config: VDLAConfig, dram: DRAM | None = None) -> list[Info]:
    """Check ``program`` and return one :class:`Info` per instruction (see module doc)."""
    if not isinstance(program, Program):
        raise VDLAProgramError(f"expected a vdla Program, got {type(program).__name__}")
    check_config(config, "the program check")
    if dram is not None and not isinstance(dram, DRAM):
        raise VDLAProgramError(f"dram must be a vdla.DRAM() holding the program's tensors, "
                               f"got {type(dram).__name__}")
    instrs = program.instructions
    if not instrs or not isinstance(instrs[-1], Finish):
        raise VDLAProgramError("a program must end with FINISH (the builder adds it: "
                               "ProgramBuilder.finish())")
    for i, uop in enumerate(program.uops):
        if not isinstance(uop, UOp) or not all(_is_int(v) for v in (uop.dst, uop.src, uop.wgt)):
            raise VDLAProgramError(f"micro-op {i} is {uop!r}, not a UOp of three ints")
    uop_sram: list[UOp | None] = [None] * config.depth(MemScope.UOP)
    infos = []
    for index, ins in enumerate(instrs):
        _check_fields(index, ins)
        if isinstance(ins, Finish) and index != len(instrs) - 1:
            raise VDLAProgramError(f"{where(index, ins)}: FINISH must be the last instruction")
        infos.append(_analyze_one(index, ins, program, config, dram, uop_sram))
    return infos


def _check_sram(index: int, ins: Instruction, program: Program, config: VDLAConfig,
                access: Access) -> None:
    depth = config.depth(access.scope)
    if access.lo < 0 or access.hi > depth:
        verb = "writes" if access.write else "reads"
        raise VDLAAccessError(
            f"{where(index, ins, program)} {verb} {access.scope.label}[{access.lo}, "
            f"{access.hi}) but {access.scope.name.lower()}_buffer has {depth} entries "
            f"(0..{depth - 1}); use smaller tiles or a smaller base")


def _analyze_one(index: int, ins: Instruction, program: Program, config: VDLAConfig,
                 dram: DRAM | None, uop_sram: list[UOp | None]) -> Info:
    accesses: list[Access] = []
    dram_bytes = 0
    trips = 0
    kernel: tuple[UOp, ...] = ()
    if isinstance(ins, (Load, Store)):
        n = ins.y_size * ins.x_size
        scope = ins.scope if isinstance(ins, Load) else MemScope.ACC
        if isinstance(ins, Load):
            if n == 0 and (any(ins.y_pad) or any(ins.x_pad)):
                raise VDLAProgramError(f"{where(index, ins, program)}: a LOAD of size zero "
                                       "is a NOP and cannot pad")
            if scope is MemScope.UOP and (any(ins.y_pad) or any(ins.x_pad)):
                raise VDLAProgramError(f"{where(index, ins, program)}: micro-ops cannot "
                                       "be padded")
            footprint = ins.sram_rows * ins.sram_cols if n else 0
            tile = config.tile_bytes(scope)
        else:
            footprint = n
            tile = config.batch * config.block_out * (4 if ins.dtype == "int32" else 1)
        if footprint:
            acc = Access(scope, ins.sram_base, ins.sram_base + footprint,
                         write=isinstance(ins, Load))
            _check_sram(index, ins, program, config, acc)
            accesses.append(acc)
        if n:
            dram_lo = ins.dram_base
            dram_hi = ins.dram_base + (ins.y_size - 1) * ins.x_stride + ins.x_size
            if scope is MemScope.UOP and isinstance(ins, Load):
                if dram_hi > len(program.uops):
                    raise VDLAAccessError(
                        f"{where(index, ins, program)} reads micro-ops [{dram_lo}, {dram_hi})"
                        f" but the program's table has {len(program.uops)}")
                for r in range(ins.y_size):
                    for c in range(ins.x_size):
                        uop_sram[ins.sram_base + r * ins.x_size + c] = program.uops[
                            ins.dram_base + r * ins.x_stride + c]
            elif dram is not None:
                dram.check(dram_lo * tile, dram_hi * tile, where(index, ins, program))
            dram_bytes = n * tile
        cycles = config.dram_cycles(dram_bytes)
    elif isinstance(ins, (Gemm, Alu)):
        if ins.uop_end < ins.uop_begin:
            raise VDLAProgramError(f"{where(index, ins, program)}: uop_end < uop_begin")
        _check_sram(index, ins, program, config,
                    Access(MemScope.UOP, ins.uop_begin, ins.uop_end, write=False))
        slots = uop_sram[ins.uop_begin : ins.uop_end]
        missing = [ins.uop_begin + i for i, u in enumerate(slots) if u is None]
        if missing:
            raise VDLAProgramError(
                f"{where(index, ins, program)} runs micro-op slot {missing[0]}, which no "
                "earlier LOAD of uop_buffer filled")
        kernel = tuple(u for u in slots if u is not None)
        for name in ("lp0", "lp1"):
            if getattr(ins, name) > MAX_LOOP:
                raise VDLAProgramError(
                    f"{where(index, ins, program)}: {name}={getattr(ins, name):,} but the loop "
                    f"fields hold at most {MAX_LOOP:,} (14 bits, as on VTA); split the loop "
                    "over several instructions")
        trips = ins.lp0 * ins.lp1 * len(kernel)
        if trips > MAX_TRIPS:
            raise VDLAProgramError(
                f"{where(index, ins, program)} runs {trips:,} micro-op steps ({ins.lp0} x "
                f"{ins.lp1} x {len(kernel)} micro-ops); the simulator runs at most "
                f"{MAX_TRIPS:,} per instruction (it holds every step's tile indices in "
                "memory): split it into several GEMM/ALU instructions")
        if trips:
            if isinstance(ins, Gemm):
                terms = [(MemScope.ACC, ins.acc_factor, [u.dst for u in kernel], True)]
                if not ins.reset:
                    terms += [(MemScope.INP, ins.inp_factor, [u.src for u in kernel], False),
                              (MemScope.WGT, ins.wgt_factor, [u.wgt for u in kernel], False)]
            else:
                terms = [(MemScope.ACC, ins.dst_factor, [u.dst for u in kernel], True)]
                if ins.imm is None:
                    terms.append((MemScope.ACC, ins.src_factor, [u.src for u in kernel],
                                  False))
            for scope, factor, cs, write in terms:
                lo, hi = _affine_range(cs, factor, ins.lp0, ins.lp1)
                acc = Access(scope, lo, hi, write)
                _check_sram(index, ins, program, config, acc)
                accesses.append(acc)
        per_uop = config.gemm_cycles_per_uop if isinstance(ins, Gemm) else \
            config.alu_cycles_per_uop
        cycles = max(1, trips * per_uop)
    else:
        cycles = 1
    return Info(index, ins.module, tuple(accesses), cycles, dram_bytes, trips, kernel)

