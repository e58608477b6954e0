"""The VDLA compute passes: ``decompose_acc_init`` (the accumulator's zeroing leaves the
reduction loop), ``lower_tensor_intrins`` (zero loops -> ``vdla.fill_zero``, tensorized calls
-> ``vdla.gemm`` in micro-op loops) and ``lower_alu`` (element-wise loops on acc_buffer ->
``vdla.alu``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from mlc.errors import ScheduleError
from mlc.target.vdla.affine import (
    UOP_LOOP,
    Affine,
    access_ptr,
    affine,
    perfect_chain,
    ptr_target,
    rectangle,
    scope_of,
)
from mlc.target.vdla.pass_helpers import GEMM_CALLS, _call, _tile_shape
from mlc.tir.arith import simplify
from mlc.tir.expr import Add as AddExpr
from mlc.tir.expr import (
    BufferLoad,
    Call,
    Cast,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    StringImm,
    Var,
    const,
)
from mlc.tir.functor import IRMutator, collect, uses_var
from mlc.tir.stmt import (
    Block,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    PrimFunc,
    SeqStmt,
    Stmt,
)
from mlc.vdla.config import MemScope

# ---------------------------------------------------------------------------------------------
# decompose_acc_init


def decompose_acc_init(func: PrimFunc) -> PrimFunc:
    """A tensorized block writing acc_buffer keeps its init (the tile's zeroing) inside the
    reduction loop: ``if k_0 == 0: CL[...] = 0``. Move it before the outermost reduction loop
    (``decompose_reduction``), where the notes' ``vdla.fill_zero(CL)`` stands."""
    from mlc.tir.schedule import Schedule

    blocks: list[Block] = collect(func.body, lambda n: isinstance(n, Block))
    targets = [b for b in blocks if b.init is not None
               and any(scope_of(w.buffer) is MemScope.ACC for w in b.writes)]
    if not targets:
        return func
    sch = Schedule(func)
    for b in targets:
        rv = sch.get_block(b.name)
        realize, loc = sch._block_of(rv)
        reduce_vars = [v for iv, val in zip(realize.block.iter_vars, realize.iter_values)
                       if iv.kind.name == "REDUCE" for v in collect(val, lambda n: isinstance(
                           n, Var))]
        loops = loc.enclosing_loops()
        outer = next((f for f in loops if any(v is f.loop_var for v in reduce_vars)), None)
        if outer is None:
            continue
        loop_rvs = sch.get_loops(rv)
        pos = [f for f in loops].index(outer)
        try:
            sch.decompose_reduction(rv, loop_rvs[pos])
        except ScheduleError:
            continue
    return sch.mod

# ---------------------------------------------------------------------------------------------
# lower_tensor_intrins


def lower_tensor_intrins(func: PrimFunc) -> PrimFunc:
    """Zero-filling loops on acc_buffer become ``vdla.fill_zero(ptr, rows, cols)``; the
    tensorized ``fuse_gemm8x8_add`` calls and the loops around them that only index tiles
    become one GEMM instruction, ``vdla.gemm(inp_ptr, wgt_ptr, acc_ptr)`` inside loops
    marked ``vdla.uop_loop`` (the micro-op kernel's two-level loop and its micro-ops)."""
    return func.with_body(_Intrins().visit(_DeclaredResets().visit(func.body)))


class _DeclaredResets(IRMutator):
    """The gemm intrinsic's declared reset, ``fill_zero(access_ptr(acc[r, c], "w"))`` (the
    tensorized tile's init), as the zeroing loops of one accumulator tile: then it merges
    with the loops around it into one ``vdla.fill_zero`` as a zeroing nest does."""

    def visit_Evaluate(self, op: Evaluate) -> Any:
        call = op.value
        if not (isinstance(call, Call) and call.op == "fill_zero" and len(call.args) == 1):
            return op
        ptr = call.args[0]
        if not (isinstance(ptr, Call) and ptr.op == "access_ptr"
                and isinstance(ptr.args[0], BufferLoad) and len(ptr.args[0].indices) == 2):
            return op
        from mlc.vdla.config import DEFAULT

        load = ptr.args[0]
        rows, cols = DEFAULT.tile_shape(MemScope.ACC)
        r, c = Var("fill_r", "int32"), Var("fill_c", "int32")
        zero = IntImm(0, load.buffer.dtype) if "int" in load.buffer.dtype else const(
            0.0, load.buffer.dtype)
        store = BufferStore(load.buffer, zero, (load.indices[0] + r, load.indices[1] + c))
        inner = For(c, const(0), const(cols), ForKind.SERIAL, store)
        return For(r, const(0), const(rows), ForKind.SERIAL, inner)


class _Intrins(IRMutator):
    def visit_For(self, op: For) -> Any:
        loops, inner = perfect_chain(op)
        if isinstance(inner, BufferStore) and scope_of(inner.buffer) is MemScope.ACC \
                and isinstance(inner.value, IntImm) and inner.value.value == 0:
            for start in range(len(loops)):
                forms = [affine(i, loops[start:]) for i in inner.indices]
                if any(f is None for f in forms) or len(forms) != 2:
                    continue
                box = rectangle(forms, loops[start:])  # type: ignore[arg-type]
                if box is None:
                    continue
                zero = _call("vdla.fill_zero", access_ptr(
                    inner.buffer, tuple(f.outer for f in forms), "w"), box[0], box[1])  # type: ignore[union-attr]
                for f in reversed(loops[:start]):
                    zero = dataclasses.replace(f, body=zero)
                return zero
        if _is_gemm_call(inner):
            call = inner.value  # type: ignore[attr-defined]
            mine = [f for f in loops if any(_uses_loop(a, f) for a in call.args)]
            start = len(loops)
            while start > 0 and loops[start - 1] in mine:
                start -= 1
            lowered: Stmt = _call("vdla.gemm", *call.args[:3])
            for k, f in enumerate(reversed(loops)):
                idx = len(loops) - 1 - k
                if idx >= start:
                    f = dataclasses.replace(f, annotations=(*f.annotations, (UOP_LOOP, 1)))
                lowered = dataclasses.replace(f, body=lowered)
            return lowered
        return self.generic_visit(op)

    def visit_Evaluate(self, op: Evaluate) -> Any:
        if _is_gemm_call(op):
            return _call("vdla.gemm", *op.value.args[:3])  # type: ignore[attr-defined]
        return op


def _uses_loop(e: PrimExpr, loop: For) -> bool:
    var = loop.loop_var
    return uses_var(e, lambda v: v is var)


def _is_gemm_call(stmt: Stmt) -> bool:
    return (isinstance(stmt, Evaluate) and isinstance(stmt.value, Call)
            and stmt.value.op in GEMM_CALLS)


# ---------------------------------------------------------------------------------------------
# lower_alu

_ALU = {Max: "MAX", Min: "MIN", AddExpr: "ADD", Mul: "MUL"}


def lower_alu(func: PrimFunc) -> PrimFunc:
    """Element-wise loops on acc_buffer (``CL2[i, j] = max(CL[i, j], 0)``, ``// 256`` which is
    ``>> 8``, a sum of two acc tiles) become ALU instructions:
    ``vdla.alu("MAX", dst_ptr, src_ptr, imm, rows, cols)`` (``imm`` is ``"acc"`` when the
    operand is the tile at ``src_ptr``), one per operation, applied in place on the
    destination after a copy.

    An operand read at row ``i % 8`` (a bias kept as one row of tiles, its 8 rows equal:
    ``CL[i, j] + BL[i % 8, j]``) is the same row of tiles for every row of the box: the
    call ends with ``"repeat_src"`` and the instruction's source index does not move with
    the rows (``src_factor = (0, 1)``), VTA's broadcast of a bias over the batch."""
    return func.with_body(_Alu().visit(func.body))


class _Alu(IRMutator):
    def visit_For(self, op: For) -> Any:
        loops, inner = perfect_chain(op)
        if not (isinstance(inner, BufferStore) and scope_of(inner.buffer) is MemScope.ACC):
            return self.generic_visit(op)
        forms = [affine(i, loops) for i in inner.indices]
        if len(forms) != 2 or any(f is None for f in forms):
            return self.generic_visit(op)
        box = rectangle(forms, loops)  # type: ignore[arg-type]
        if box is None:
            return self.generic_visit(op)
        dst = access_ptr(inner.buffer, tuple(f.outer for f in forms), "w")  # type: ignore[union-attr]
        steps: list[Stmt] = []
        if not _emit_alu(inner.value, dst, loops, forms, box, steps, first=True):  # type: ignore[arg-type]
            return self.generic_visit(op)
        return steps[0] if len(steps) == 1 else SeqStmt(tuple(steps))


_REPEAT = StringImm("repeat_src")


def _acc_tile(e: PrimExpr, loops: list[For], forms: list[Affine]
              ) -> tuple[PrimExpr, tuple[PrimExpr, ...]] | None:
    """``e`` is a load of an acc buffer at the same element as the store (or at the same
    element of a repeated row of tiles, ``BL[i % 8, j]``): its pointer, and the flag the
    ALU call ends with (``("repeat_src",)`` for a repeated row, else none)."""
    if isinstance(e, Cast):
        e = e.value
    if not (isinstance(e, BufferLoad) and scope_of(e.buffer) is MemScope.ACC):
        return None
    indices = list(e.indices)
    rows = _tile_shape(e.buffer)[0]
    repeat = False
    row = simplify(indices[0])
    if isinstance(row, FloorMod) and isinstance(row.b, IntImm) and row.b.value == rows:
        indices[0], repeat = row.a, True
    mine = [affine(i, loops) for i in indices]
    if any(m is None or m.coef != f.coef for m, f in zip(mine, forms)):
        return None
    outer = [m.outer for m in mine]  # type: ignore[union-attr]
    if repeat:
        # the box starts on a tile row of the source: rows r..r+7 read its rows 0..7
        outer[0] = simplify(FloorMod(outer[0], const(rows)))
    return access_ptr(e.buffer, tuple(outer), "r"), ((_REPEAT,) if repeat else ())


def _emit_alu(e: PrimExpr, dst: PrimExpr, loops: list[For], forms: list[Affine],
              box: list[int], steps: list[Stmt], first: bool) -> bool:
    """Append the ALU steps that leave ``e`` in ``dst``; False if ``e`` is not ALU work."""
    tile = _acc_tile(e, loops, forms)
    if tile is not None:
        src, flag = tile
        if first and not flag and _same_ptr(src, dst):
            return True
        steps.append(_call("vdla.alu", StringImm("MUL"), dst, dst, 0, *box))
        steps.append(_call("vdla.alu", StringImm("ADD"), dst, src, StringImm("acc"), *box,
                           *flag))
        return True
    if isinstance(e, FloorDiv) and isinstance(e.b, IntImm) and e.b.value > 0 \
            and e.b.value & (e.b.value - 1) == 0:
        # x // 2**s is the arithmetic shift x >> s (requantization)
        if _emit_alu(e.a, dst, loops, forms, box, steps, first):
            shift = e.b.value.bit_length() - 1
            steps.append(_call("vdla.alu", StringImm("SHR"), dst, dst, shift, *box))
            return True
        return False
    for cls, name in _ALU.items():
        if isinstance(e, cls):
            a, b = e.a, e.b  # type: ignore[attr-defined]
            if isinstance(a, IntImm):
                a, b = b, a
            if isinstance(b, IntImm):
                if not _emit_alu(a, dst, loops, forms, box, steps, first):
                    return False
                steps.append(_call("vdla.alu", StringImm(name), dst, dst, b.value, *box))
                return True
            other = _acc_tile(b, loops, forms)
            if other is None:
                a, b = b, a  # the repeated bias may come first: BL[i % 8, j] + CL[i, j]
                other = _acc_tile(b, loops, forms)
            if other is not None and _emit_alu(a, dst, loops, forms, box, steps, first):
                steps.append(_call("vdla.alu", StringImm(name), dst, other[0],
                                   StringImm("acc"), *box, *other[1]))
                return True
            return False
    return False


def _same_ptr(a: PrimExpr, b: PrimExpr) -> bool:
    ta, tb = ptr_target(a), ptr_target(b)
    if ta is None or tb is None or ta.buffer is not tb.buffer:
        return False
    diffs = [simplify(x - y) for x, y in zip(ta.indices, tb.indices)]
    return all(isinstance(d, IntImm) and d.value == 0 for d in diffs)
