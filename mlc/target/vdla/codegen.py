"""VDLA codegen: run the host loops of the lowered program once and emit the instructions.

What is left after the VDLA passes is a host program (loops, ``if``\\ s) around instruction
calls: ``vdla.dma_copy2d``, ``vdla.fill_zero``, ``vdla.gemm`` (inside its micro-op loops),
``vdla.alu``. Like VTA's runtime, codegen walks the loops with concrete values and appends
one instruction per call:

* each on-chip buffer gets a fixed range of tiles of its SRAM (an ``Allocate`` reached again
  reuses its range; the dependency tokens order the reuse);
* DRAM tensors are stored *packed*, every tile contiguous (the Module packs the numpy arrays
  before the run and unpacks the results), so a box of tiles is a 2-D strided DMA;
* a GEMM's loops become its micro-op loop: the outer two are ``lp0``/``lp1`` with their
  index factors, the rest are unrolled into micro-ops; identical kernels share micro-ops;
* :func:`mlc.vdla.insert_dependencies` adds the tokens.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from mlc.errors import LoweringError
from mlc.target.vdla.affine import UOP_LOOP, as_int, perfect_chain, ptr_target, scope_of
from mlc.tir.arith.evaluate import evaluate_int
from mlc.tir.expr import BufferLoad, Call, IntImm, PrimExpr, StringImm, Var
from mlc.tir.stmt import (
    Allocate,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)
from mlc.vdla.config import MemScope, VDLAConfig
from mlc.vdla.deps import insert_dependencies
from mlc.vdla.isa import Alu, AluOp, Finish, Gemm, Instruction, Load, Program, Store, UOp


@dataclass(frozen=True)
class DramTensor:
    """A parameter as it lies in DRAM: packed in tiles of ``tile`` elements, from byte
    ``base``. ``role`` is ``"in"`` (loaded), ``"out"`` (stored) or ``"unused"``."""

    buffer: Buffer
    shape: tuple[int, int]
    tile: tuple[int, int]
    dtype: str
    base: int
    role: str

    @property
    def tiles(self) -> tuple[int, int]:
        return self.shape[0] // self.tile[0], self.shape[1] // self.tile[1]

    @property
    def nbytes(self) -> int:
        import numpy as np

        return self.shape[0] * self.shape[1] * np.dtype(self.dtype).itemsize


@dataclass
class _Sram:
    scope: MemScope
    base: int  # first tile
    rows: int  # tiles per column
    cols: int  # tiles per row


@dataclass
class _State:
    config: VDLAConfig
    instructions: list[Instruction] = field(default_factory=list)
    kernels: dict[tuple[UOp, ...], int] = field(default_factory=dict)
    uops: list[UOp] = field(default_factory=list)
    sram: dict[int, _Sram] = field(default_factory=dict)  # id(Allocate) -> placement
    buffers: dict[int, _Sram] = field(default_factory=dict)  # id(buffer.data) -> placement
    used: dict[MemScope, int] = field(default_factory=dict)
    dram: dict[int, DramTensor] = field(default_factory=dict)  # id(buffer.data) -> tensor


def generate(func: PrimFunc, config: VDLAConfig) -> tuple[Program, list[DramTensor]]:
    """The instruction stream of a lowered ``func`` and the DRAM layout of its parameters."""
    st = _State(config)
    roles = _roles(func)
    offset = 0
    tensors = []
    for buf in func.params:
        shape = tuple(as_int(s) for s in buf.shape)
        role, scope = roles.get(id(buf.data), ("unused", None))
        if len(shape) != 2:
            raise LoweringError(
                f"vdla: parameter {buf.name!r} has shape {shape}; the accelerator's DMA moves "
                "2-D matrices of tiles (reshape it to 2-D)")
        tile = config.tile_shape(scope) if scope is not None else (1, 1)
        if role == "out":
            tile = (config.batch, config.block_out)
        for d in (0, 1):
            if shape[d] % tile[d]:
                raise LoweringError(
                    f"vdla: {buf.name!r} has shape {shape}, but the DMA moves whole "
                    f"{tile[0]}x{tile[1]} tiles: dimension {d} ({shape[d]}) is not a multiple "
                    f"of {tile[d]}. Pad the tensor to a multiple of {tile[d]} (and slice the "
                    "result) or choose a size that is one")
        offset = -(-offset // config.dram_align) * config.dram_align
        t = DramTensor(buf, shape, tile, buf.dtype, offset, role)  # type: ignore[arg-type]
        offset += t.nbytes
        tensors.append(t)
        st.dram[id(buf.data)] = t
    _walk(func.body, {}, st, None)
    table = len(st.uops)
    if table > config.depth(MemScope.UOP):
        raise LoweringError(
            f"vdla: the program needs {table} micro-ops but uop_buffer holds "
            f"{config.depth(MemScope.UOP)}: fewer distinct GEMM kernels (fewer unrolled "
            "loops inside the tensorized region) would fit")
    head: list[Instruction] = []
    if table:
        head.append(Load(scope=MemScope.UOP, sram_base=0, dram_base=0, y_size=1, x_size=table,
                         x_stride=table))
    program = Program(tuple([*head, *st.instructions, Finish()]), tuple(st.uops))
    return insert_dependencies(program, config), tensors


def _roles(func: PrimFunc) -> dict[int, tuple[str, MemScope | None]]:
    """Which parameters are loaded (and into which buffer) and which are stored."""
    from mlc.tir.functor import collect

    roles: dict[int, tuple[str, MemScope | None]] = {}
    for call in collect(func.body, lambda n: isinstance(n, Call) and n.op == "vdla.dma_copy2d"):
        dst, src = ptr_target(call.args[0]), ptr_target(call.args[1])
        assert dst is not None and src is not None
        if scope_of(dst.buffer) is None:
            roles[id(dst.buffer.data)] = ("out", MemScope.ACC)
        else:
            roles[id(src.buffer.data)] = ("in", scope_of(dst.buffer))
    return roles


# ---------------------------------------------------------------------------------------------


def _walk(stmt: Stmt, env: dict[Var, int], st: _State, tid: int | None) -> None:
    if isinstance(stmt, SeqStmt):
        for s in stmt.seq:
            _walk(s, env, st, tid)
    elif isinstance(stmt, For):
        if dict(stmt.annotations).get(UOP_LOOP):
            _gemm_nest(stmt, env, st)
            return
        lo, n = evaluate_int(stmt.min, env), evaluate_int(stmt.extent, env)
        for v in range(lo, lo + n):
            env[stmt.loop_var] = v
            _walk(stmt.body, env, st, tid)
        env.pop(stmt.loop_var, None)
    elif isinstance(stmt, IfThenElse):
        if evaluate_int(stmt.condition, env):
            _walk(stmt.then_case, env, st, tid)
        elif stmt.else_case is not None:
            _walk(stmt.else_case, env, st, tid)
    elif isinstance(stmt, LetStmt):
        env[stmt.var] = evaluate_int(stmt.value, env)
        _walk(stmt.body, env, st, tid)
    elif isinstance(stmt, Allocate):
        _allocate(stmt, st)
        _walk(stmt.body, env, st, tid)
    elif isinstance(stmt, Evaluate) and isinstance(stmt.value, Call) \
            and stmt.value.op.startswith("vdla."):
        _instruction(stmt.value, env, st)
    elif isinstance(stmt, BufferStore):
        _refuse_store(stmt)
    else:
        raise LoweringError(
            f"vdla: the accelerator cannot run this statement (only DMA copies, tensorized "
            f"GEMMs and element-wise ALU loops on acc_buffer become instructions):\n{stmt}")


def _refuse_store(stmt: BufferStore) -> None:
    scope = scope_of(stmt.buffer)
    if scope is MemScope.ACC:
        raise LoweringError(
            f"vdla: a computation writes {stmt.buffer.name!r} (acc_buffer) element by element: "
            f"`{stmt}`. The accelerator computes in acc_buffer only with tensor instructions: "
            "tensorize its 8x8x8 tile with vdla.gemm8x8 (s[CL].tensorize(yi, vdla.gemm8x8)), "
            "or make it an element-wise ALU operation (max/min/+/*/// 2**k of an acc tile)")
    if scope is not None:
        raise LoweringError(
            f"vdla: `{stmt}` writes {stmt.buffer.name!r} ({scope.value}) but is not a DMA copy "
            "of whole tiles from a DRAM tensor: copy a box whose sides are multiples of 8")
    raise LoweringError(
        f"vdla: `{stmt}` computes on the host: every computation of a vdla program must run in "
        "the accelerator's buffers (cache_read into vdla.inp_buffer / vdla.wgt_buffer, "
        "cache_write into vdla.acc_buffer, tensorize with vdla.gemm8x8) or be a copy of tiles "
        "whose sides are multiples of 8")


def _allocate(op: Allocate, st: _State) -> None:
    scope = scope_of(op.buffer)
    if scope is None:
        raise LoweringError(f"vdla: the host program allocates {op.buffer.name!r} "
                            f"({op.buffer.scope}); vdla programs allocate on-chip buffers only")
    if id(op) in st.sram:
        st.buffers[id(op.buffer.data)] = st.sram[id(op)]
        return
    shape = tuple(as_int(s) for s in op.buffer.shape)
    tr, tc = st.config.tile_shape(scope)
    if len(shape) != 2 or shape[0] % tr or shape[1] % tc:
        raise LoweringError(
            f"vdla: on-chip buffer {op.buffer.name!r} ({scope.value}) has shape {shape}; it must "
            f"hold whole {tr}x{tc} tiles. Split the loops it is cached at by multiples of 8")
    rows, cols = shape[0] // tr, shape[1] // tc
    base = st.used.get(scope, 0)
    depth = st.config.depth(scope)
    if base + rows * cols > depth:
        raise LoweringError(
            f"vdla: on-chip buffer {op.buffer.name!r} needs {rows * cols} tiles of "
            f"{scope.value} ({rows * cols * st.config.tile_bytes(scope)} bytes) but only "
            f"{depth - base} of its {depth} tiles are free ({depth * st.config.tile_bytes(scope)} "
            f"bytes in all). Cache a smaller tile: split the loop it is computed at by a smaller "
            f"factor, or move compute_at to an inner loop")
    st.used[scope] = base + rows * cols
    st.sram[id(op)] = st.buffers[id(op.buffer.data)] = _Sram(scope, base, rows, cols)


def _tid(call: Call) -> tuple[tuple[PrimExpr, ...], int | None]:
    args = call.args
    if args and isinstance(args[-1], StringImm) and args[-1].value.startswith("tid="):
        return args[:-1], int(args[-1].value[4:])
    return args, None


def _elem(ptr: PrimExpr, env: dict[Var, int]) -> tuple[Buffer, int, int]:
    target = ptr_target(ptr)
    assert isinstance(target, BufferLoad)
    r, c = (evaluate_int(i, env) for i in target.indices)
    return target.buffer, r, c


def _sram_tile(st: _State, buf: Buffer, r: int, c: int, what: str) -> tuple[_Sram, int, int]:
    place = st.buffers.get(id(buf.data))
    if place is None:
        raise LoweringError(f"vdla: {what} uses {buf.name!r}, which is not allocated on chip")
    tr, tc = st.config.tile_shape(place.scope)
    if r % tr or c % tc:
        raise LoweringError(
            f"vdla: {what} starts at element ({r}, {c}) of {buf.name!r}, inside a tile; "
            f"on-chip accesses start on {tr}x{tc} tile boundaries")
    return place, r // tr, c // tc


def _instruction(call: Call, env: dict[Var, int], st: _State) -> None:
    args, tid = _tid(call)
    if call.op == "vdla.dma_copy2d":
        _dma(args, env, st, tid)
    elif call.op == "vdla.fill_zero":
        buf, r, c = _elem(args[0], env)
        place, tr, tc = _sram_tile(st, buf, r, c, "fill_zero")
        rows, cols = _box_tiles(st, place, args[1], args[2], env, "fill_zero")
        kernel = _kernel(st, (UOp(place.base + tr * place.cols + tc, 0, 0),))
        st.instructions.append(Gemm(uop_begin=kernel, uop_end=kernel + 1, lp0=rows, lp1=cols,
                                    acc_factor=(place.cols, 1), reset=True, tid=tid))
    elif call.op == "vdla.gemm":
        _gemm_nest(Evaluate(call), env, st)
    elif call.op == "vdla.alu":
        _alu(args, env, st, tid)
    else:
        raise LoweringError(f"vdla: unknown instruction call {call.op!r}")


def _box_tiles(st: _State, place: _Sram, rows: PrimExpr, cols: PrimExpr,
               env: dict[Var, int], what: str) -> tuple[int, int]:
    tr, tc = st.config.tile_shape(place.scope)
    h, w = evaluate_int(rows, env), evaluate_int(cols, env)
    if h % tr or w % tc:
        raise LoweringError(
            f"vdla: {what} covers {h}x{w} elements; the accelerator moves whole {tr}x{tc} "
            f"tiles, so both sides must be multiples of {tr} and {tc} (split by a multiple "
            "of 8, or pad the tensor)")
    return h // tr, w // tc


def _dma(args: tuple[PrimExpr, ...], env: dict[Var, int], st: _State, tid: int | None) -> None:
    dst, dr, dc = _elem(args[0], env)
    src, sr, sc = _elem(args[1], env)
    load = scope_of(dst) is not None
    sbuf, srow, scol = (dst, dr, dc) if load else (src, sr, sc)
    mbuf, mrow, mcol = (src, sr, sc) if load else (dst, dr, dc)
    what = f"the copy {'into' if load else 'out of'} {sbuf.name!r}"
    place, tr, tc = _sram_tile(st, sbuf, srow, scol, what)
    rows, cols = _box_tiles(st, place, args[2], args[3], env, what)
    tensor = st.dram[id(mbuf.data)]
    if mrow % tensor.tile[0] or mcol % tensor.tile[1]:
        raise LoweringError(
            f"vdla: {what} starts at element ({mrow}, {mcol}) of {mbuf.name!r}, inside a "
            f"{tensor.tile[0]}x{tensor.tile[1]} tile: split the loops by multiples of 8")
    tile_bytes = tensor.tile[0] * tensor.tile[1] * (4 if tensor.dtype == "int32" else 1)
    row_tiles = tensor.tiles[1]
    dram0 = tensor.base // tile_bytes + (mrow // tensor.tile[0]) * row_tiles \
        + mcol // tensor.tile[1]
    # the on-chip side is dense rows of `place.cols` tiles: one DMA when the box spans whole
    # rows (or is one row), else one per row of tiles
    groups = [(0, rows)] if cols == place.cols or rows == 1 else [(y, 1) for y in range(rows)]
    for y0, ny in groups:
        sram = place.base + (tr + y0) * place.cols + tc
        dram = dram0 + y0 * row_tiles
        if load:
            st.instructions.append(Load(scope=place.scope, sram_base=sram, dram_base=dram,
                                        y_size=ny, x_size=cols, x_stride=row_tiles, tid=tid))
        else:
            st.instructions.append(Store(sram_base=sram, dram_base=dram, y_size=ny,
                                         x_size=cols, x_stride=row_tiles,
                                         dtype=tensor.dtype, tid=tid))


def _kernel(st: _State, uops: tuple[UOp, ...]) -> int:
    if uops not in st.kernels:
        st.kernels[uops] = len(st.uops)
        st.uops.extend(uops)
    return st.kernels[uops]


def _gemm_nest(stmt: Stmt, env: dict[Var, int], st: _State) -> None:
    """One GEMM instruction for the micro-op loops ``stmt`` starts with."""
    loops, inner = perfect_chain(stmt)
    assert isinstance(inner, Evaluate) and isinstance(inner.value, Call)
    args, tid = _tid(inner.value)
    extents = [as_int(f.extent) for f in loops]
    outer = loops[:2]
    unrolled = loops[2:]
    env = dict(env)

    def tiles() -> tuple[int, int, int]:
        out = []
        for ptr, name in zip(args[:3], ("input", "weight", "accumulator")):
            buf, r, c = _elem(ptr, env)
            place, tr, tc = _sram_tile(st, buf, r, c, f"the GEMM's {name} tile")
            out.append(place.base + tr * place.cols + tc)
        return out[0], out[1], out[2]

    for f in loops:
        env[f.loop_var] = 0
    base = tiles()
    factors = []
    for f in outer:
        env[f.loop_var] = 1
        moved = tiles()
        env[f.loop_var] = 0
        factors.append(tuple(m - b for m, b in zip(moved, base)))
    while len(factors) < 2:
        factors.append((0, 0, 0))
    uops = []
    for values in itertools.product(*(range(e) for e in extents[2:])):
        for f, v in zip(unrolled, values):
            env[f.loop_var] = v
        inp, wgt, acc = tiles()
        uops.append(UOp(dst=acc, src=inp, wgt=wgt))
    lp = [*extents[:2], 1, 1][:2]
    kernel = _kernel(st, tuple(uops))
    st.instructions.append(Gemm(
        uop_begin=kernel, uop_end=kernel + len(uops), lp0=lp[0], lp1=lp[1],
        acc_factor=(factors[0][2], factors[1][2]), inp_factor=(factors[0][0], factors[1][0]),
        wgt_factor=(factors[0][1], factors[1][1]), tid=tid))


def _alu(args: tuple[PrimExpr, ...], env: dict[Var, int], st: _State, tid: int | None) -> None:
    op = AluOp(args[0].value)  # type: ignore[attr-defined]
    dbuf, dr, dc = _elem(args[1], env)
    sbuf, sr, sc = _elem(args[2], env)
    imm = args[3].value if isinstance(args[3], IntImm) else None  # "acc": a tile operand
    dplace, dtr, dtc = _sram_tile(st, dbuf, dr, dc, f"the ALU {op.value}")
    splace, str_, stc = _sram_tile(st, sbuf, sr, sc, f"the ALU {op.value}")
    rows, cols = _box_tiles(st, dplace, args[4], args[5], env, f"the ALU {op.value}")
    # "repeat_src": the source is one row of tiles, the same for every row of the box
    repeat = len(args) > 6 and isinstance(args[6], StringImm) and args[6].value == "repeat_src"
    kernel = _kernel(st, (UOp(dst=dplace.base + dtr * dplace.cols + dtc,
                              src=splace.base + str_ * splace.cols + stc),))
    st.instructions.append(Alu(op=op, uop_begin=kernel, uop_end=kernel + 1, lp0=rows,
                               lp1=cols, dst_factor=(dplace.cols, 1),
                               src_factor=(0 if repeat else splace.cols, 1), imm=imm,
                               tid=tid))
