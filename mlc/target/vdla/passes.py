"""The VDLA lowering passes, in the order :data:`mlc.target.vdla.PASSES` runs them.

After ``lower_blocks`` a schedule for VDLA reads like the notes' loop nest, element by
element: copies into the on-chip buffers, the tensorized ``fuse_gemm8x8_add`` calls, copies
back. These passes turn it, step by step, into the instruction-level program::

    decompose_acc_init     the accumulator's zeroing leaves the reduction loop (blocks)
    allocate_sram          each on-chip buffer is allocated where it is used, one tile
                           of the loops around it large (the DMA's destination)
    lower_dma_copies       copy loops -> vdla.dma_copy2d(dst_ptr, src_ptr, rows, cols)
    lower_tensor_intrins   zero loops -> vdla.fill_zero; fuse_gemm8x8_add in loops ->
                           a GEMM whose loops become its micro-op loops
    lower_alu              element-wise loops on acc_buffer -> vdla.alu(op, ...)
    inject_virtual_threads a vthread/cthread loop -> one interleaved instruction stream,
                           each thread with its own copy of the on-chip buffers

Codegen (:mod:`mlc.target.vdla.codegen`) then runs the host loops once, emitting one
instruction per call, and inserts the dependency tokens
(:func:`mlc.vdla.insert_dependencies`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mlc.errors import ScheduleError
from mlc.target.vdla.affine import (
    UOP_LOOP,
    Affine,
    access_ptr,
    affine,
    as_int,
    perfect_chain,
    ptr_target,
    rectangle,
    scope_of,
)
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
from mlc.tir.functor import IRMutator, IRVisitor, collect, substitute, uses_var
from mlc.tir.stmt import (
    Allocate,
    Block,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    PrimFunc,
    SeqStmt,
    Stmt,
)
from mlc.vdla.config import MemScope

GEMM_CALLS = ("fuse_gemm8x8_add", "gemm8x8")


def _call(name: str, *args: Any) -> Stmt:
    return Evaluate(Call("int32", name, tuple(a if isinstance(a, PrimExpr) else const(a)
                                              for a in args)))


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
# allocate_sram


@dataclasses.dataclass
class _Use:
    loops: tuple[For, ...]
    indices: tuple[PrimExpr, ...]
    tile: bool  # an access_ptr: the access covers a whole tile from this element


class _Uses(IRVisitor):
    def __init__(self, buf: Buffer) -> None:
        self.buf = buf
        self.stack: list[For] = []
        self.uses: list[_Use] = []

    def visit_For(self, op: For) -> None:
        self.stack.append(op)
        self.visit(op.body)
        self.stack.pop()

    def visit_Call(self, op: Call) -> None:
        target = ptr_target(op)
        if target is not None and target.buffer is self.buf:
            self.uses.append(_Use(tuple(self.stack), target.indices, True))
            return
        self.generic_visit(op)

    def visit_BufferLoad(self, op: BufferLoad) -> None:
        if op.buffer is self.buf:
            self.uses.append(_Use(tuple(self.stack), op.indices, False))
        self.generic_visit(op)

    def visit_BufferStore(self, op: BufferStore) -> None:
        if op.buffer is self.buf:
            self.uses.append(_Use(tuple(self.stack), op.indices, False))
        self.generic_visit(op)


def allocate_sram(func: PrimFunc) -> PrimFunc:
    """Allocate each on-chip buffer inside the deepest loop around all of its uses, as large
    as one iteration of that loop needs: ``AL`` cached at ``ko`` holds one ``ko`` step's
    tiles, not all of A. Each iteration writes the buffer before reading it (a cache is
    filled where it is attached), so no value crosses iterations."""
    return func.with_body(_Allocator().visit(func.body))


class _Allocator(IRMutator):
    def visit_Allocate(self, op: Allocate) -> Any:
        body = self.visit(op.body)
        scope = scope_of(op.buffer)
        if scope is None or scope is MemScope.UOP:
            return dataclasses.replace(op, body=body)
        uses = _Uses(op.buffer)
        uses.visit(body)
        if not uses.uses:
            return body
        common = _common_prefix([u.loops for u in uses.uses])
        tile = _tile_shape(op.buffer)
        starts: list[PrimExpr] = []
        shape: list[int] = []
        for d in range(len(op.buffer.shape)):
            lo_hi = []
            for u in uses.uses:
                inner = list(u.loops[len(common):])
                form = affine(u.indices[d], inner)
                if form is None:
                    return dataclasses.replace(op, body=body)
                lo = sum(min(0, c * (as_int(_extent(inner, v)) - 1)) for v, c in form.coef.items())
                hi = sum(max(0, c * (as_int(_extent(inner, v)) - 1)) for v, c in form.coef.items())
                hi += tile[d] if u.tile else 1
                lo_hi.append((form.outer, lo, hi))
            base = lo_hi[0][0]
            if any(not _same(base, o) for o, _, _ in lo_hi):
                return dataclasses.replace(op, body=body)
            shifts = [simplify(o - base) for o, _, _ in lo_hi]
            shift = [sh.value for sh in shifts if isinstance(sh, IntImm)]
            if len(shift) != len(shifts):
                return dataclasses.replace(op, body=body)
            lo = min(sh + a for sh, (_, a, _) in zip(shift, lo_hi))
            hi = max(sh + b for sh, (_, _, b) in zip(shift, lo_hi))
            starts.append(simplify(base + lo))
            shape.append(hi - lo)
        new_buf = dataclasses.replace(op.buffer, shape=tuple(const(s) for s in shape))
        body = _Rebase(op.buffer, new_buf, starts).visit(body)
        if not common:
            return Allocate(new_buf, body)
        return _InsertAlloc(common[-1], new_buf).visit(body)


def _extent(loops: list[For], v: Var) -> PrimExpr:
    return next(f.extent for f in loops if f.loop_var is v)


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    d = simplify(a - b)
    return isinstance(d, IntImm)


def _tile_shape(buf: Buffer) -> tuple[int, ...]:
    from mlc.vdla.config import DEFAULT

    scope = scope_of(buf)
    if scope is None or len(buf.shape) != 2:
        return tuple(1 for _ in buf.shape)
    return DEFAULT.tile_shape(scope)


def _common_prefix(stacks: list[tuple[For, ...]]) -> tuple[For, ...]:
    first = stacks[0]
    n = 0
    while all(len(s) > n and s[n] is first[n] for s in stacks):
        n += 1
    return first[:n]


class _Rebase(IRMutator):
    def __init__(self, old: Buffer, new: Buffer, starts: list[PrimExpr]) -> None:
        self.old, self.new, self.starts = old, new, starts

    def _idx(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        return tuple(simplify(self.visit(i) - s) for i, s in zip(indices, self.starts))

    def visit_BufferLoad(self, op: BufferLoad) -> Any:
        if op.buffer is self.old:
            return BufferLoad(self.new, self._idx(op.indices))
        return self.generic_visit(op)

    def visit_BufferStore(self, op: BufferStore) -> Any:
        if op.buffer is self.old:
            return BufferStore(self.new, self.visit(op.value), self._idx(op.indices))
        return self.generic_visit(op)


class _InsertAlloc(IRMutator):
    def __init__(self, loop: For, buf: Buffer) -> None:
        self.loop, self.buf = loop, buf

    def visit_For(self, op: For) -> Any:
        if op.loop_var is self.loop.loop_var:
            return dataclasses.replace(op, body=Allocate(self.buf, op.body))
        return self.generic_visit(op)


# ---------------------------------------------------------------------------------------------
# lower_dma_copies


def lower_dma_copies(func: PrimFunc) -> PrimFunc:
    """A loop nest copying a box between a DRAM tensor and an on-chip buffer becomes one
    ``vdla.dma_copy2d(dst_ptr, src_ptr, rows, cols)`` (the notes' ``dma_copy2d``)."""
    return func.with_body(_Copies().visit(func.body))


def _box_copy(loops: list[For], store: Stmt) -> Stmt | None:
    if not isinstance(store, BufferStore):
        return None
    value = store.value
    if isinstance(value, Cast):
        value = value.value
    if not isinstance(value, BufferLoad):
        return None
    dst, src = store.buffer, value.buffer
    if (scope_of(dst) is None) == (scope_of(src) is None):
        return None
    if len(store.indices) != 2 or len(value.indices) != 2:
        return None
    d = [affine(i, loops) for i in store.indices]
    s = [affine(i, loops) for i in value.indices]
    if any(f is None for f in (*d, *s)):
        return None
    dd: list[Affine] = d  # type: ignore[assignment]
    ss: list[Affine] = s  # type: ignore[assignment]
    if any(a.coef != b.coef for a, b in zip(dd, ss)):
        return None
    box = rectangle(dd, loops)
    if box is None:
        return None
    return _call("vdla.dma_copy2d", access_ptr(dst, tuple(a.outer for a in dd), "w"),
                 access_ptr(src, tuple(a.outer for a in ss), "r"), box[0], box[1])


class _Copies(IRMutator):
    def visit_For(self, op: For) -> Any:
        loops, inner = perfect_chain(op)
        for start in range(len(loops)):
            lowered = _box_copy(loops[start:], inner)
            if lowered is not None:
                for f in reversed(loops[:start]):
                    lowered = dataclasses.replace(f, body=lowered)
                return lowered
        return self.generic_visit(op)


# ---------------------------------------------------------------------------------------------
# lower_tensor_intrins


def lower_tensor_intrins(func: PrimFunc) -> PrimFunc:
    """Zero-filling loops on acc_buffer become ``vdla.fill_zero(ptr, rows, cols)``; the
    tensorized ``fuse_gemm8x8_add`` calls and the loops around them that only index tiles
    become one GEMM instruction, ``vdla.gemm(inp_ptr, wgt_ptr, acc_ptr)`` inside loops
    marked ``vdla.uop_loop`` (the micro-op kernel's two-level loop and its micro-ops)."""
    return func.with_body(_Intrins().visit(func.body))


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


# ---------------------------------------------------------------------------------------------
# inject_virtual_threads


def inject_virtual_threads(func: PrimFunc) -> PrimFunc:
    """A loop bound to ``vthread`` or ``cthread`` becomes one instruction stream in which the
    threads take turns, step by step (TVM's ``InjectVirtualThread``)::

        for t in vthread(2):                     AL = alloc(2 x the tile)   # a copy each
            AL = alloc(tile)                     for ko in range(n):
            for ko in range(n):          ->          dma_copy2d(AL[0], A[t=0, ko])
                dma_copy2d(AL, A[t, ko])             gemm(CL[0], AL[0], BL[0])
                gemm(CL, AL, BL)                     dma_copy2d(AL[1], A[t=1, ko])
                                                     gemm(CL[1], AL[1], BL[1])

    The loop is pushed inwards through loops and sequences that do not depend on it and unrolled at
    the innermost statements: a sequence of instructions (one step of a thread: its loads and
    the GEMM that uses them) or a single instruction; every on-chip buffer allocated inside it
    gets one copy per thread (stacked along its rows). Dependency tokens are inserted later,
    from what each instruction touches, so thread 0's next load waits only for thread 0's GEMM
    and runs while thread 1 computes."""
    return func.with_body(_VThreads().visit(func.body))


def _is_vthread(f: For) -> bool:
    tag = f.thread_binding or ""
    return f.kind is ForKind.THREAD_BINDING and (tag.startswith("vthread") or tag == "cthread")


class _VThreads(IRMutator):
    def visit_For(self, op: For) -> Any:
        if not _is_vthread(op):
            return self.generic_visit(op)
        body = self.visit(op.body)
        n = as_int(op.extent)
        var = op.loop_var
        allocs: list[Buffer] = []
        body = _Expand(var, n, allocs).visit(body)
        out = _interleave(body, var, n)
        for buf in reversed(allocs):
            out = Allocate(buf, out)
        return out


class _Expand(IRMutator):
    """Drop the on-chip allocations inside the thread loop, each replaced by one buffer with
    a copy per thread (thread ``t``'s rows start at ``t * rows``)."""

    def __init__(self, var: Var, n: int, allocs: list[Buffer]) -> None:
        self.var, self.n, self.allocs = var, n, allocs
        self.map: dict[int, tuple[Buffer, int]] = {}

    def visit_Allocate(self, op: Allocate) -> Any:
        if scope_of(op.buffer) is None:
            return self.generic_visit(op)
        rows = as_int(op.buffer.shape[0])
        new = dataclasses.replace(op.buffer, shape=(const(rows * self.n), *op.buffer.shape[1:]))
        self.map[id(op.buffer)] = (new, rows)
        self.allocs.append(new)
        return self.visit(op.body)

    def _idx(self, buf: Buffer, indices: tuple[PrimExpr, ...]
             ) -> tuple[Buffer, tuple[PrimExpr, ...]]:
        indices = tuple(self.visit(i) for i in indices)
        if id(buf) not in self.map:
            return buf, indices
        new, rows = self.map[id(buf)]
        return new, (simplify(self.var * rows + indices[0]), *indices[1:])

    def visit_BufferLoad(self, op: BufferLoad) -> Any:
        buf, idx = self._idx(op.buffer, op.indices)
        return BufferLoad(buf, idx)

    def visit_BufferStore(self, op: BufferStore) -> Any:
        buf, idx = self._idx(op.buffer, op.indices)
        return BufferStore(buf, self.visit(op.value), idx)


def _interleave(stmt: Stmt, var: Var, n: int) -> Stmt:
    def uses(node: Any) -> bool:
        return uses_var(node, lambda v: v is var)

    if not uses(stmt):
        return stmt
    if isinstance(stmt, For) and not dict(stmt.annotations).get(UOP_LOOP) \
            and not uses(stmt.min) and not uses(stmt.extent):
        return dataclasses.replace(stmt, body=_interleave(stmt.body, var, n))
    if isinstance(stmt, SeqStmt) and not all(_is_instruction(s) for s in stmt.seq):
        return SeqStmt(tuple(_interleave(s, var, n) for s in stmt.seq))
    if isinstance(stmt, IfThenElse) and not uses(stmt.condition):
        return dataclasses.replace(
            stmt, then_case=_interleave(stmt.then_case, var, n),
            else_case=None if stmt.else_case is None else _interleave(stmt.else_case, var, n))
    if isinstance(stmt, Allocate):
        return dataclasses.replace(stmt, body=_interleave(stmt.body, var, n))
    return SeqStmt(tuple(_TagThread(t).visit(substitute(stmt, {var: const(t, var.dtype)}))
                         for t in range(n)))


def _is_instruction(stmt: Stmt) -> bool:
    """One instruction: a call, or a GEMM with its micro-op loops."""
    return isinstance(stmt, Evaluate) or (
        isinstance(stmt, For) and bool(dict(stmt.annotations).get(UOP_LOOP)))


class _TagThread(IRMutator):
    """Append the thread's id to each instruction call (the printer's ``@TID``)."""

    def __init__(self, tid: int) -> None:
        self.tid = tid

    def visit_Call(self, op: Call) -> Any:
        new = self.generic_visit(op)
        if op.op.startswith("vdla."):
            return Call(op.dtype, op.op, (*new.args, StringImm(f"tid={self.tid}")))
        return new

    def visit_BufferLoad(self, op: BufferLoad) -> Any:
        return BufferLoad(op.buffer, tuple(simplify(i) for i in op.indices))


__all__ = ["allocate_sram", "decompose_acc_init", "inject_virtual_threads", "lower_alu",
           "lower_dma_copies", "lower_tensor_intrins"]
