"""The VDLA memory passes: ``allocate_sram`` (each on-chip buffer allocated where it is used,
one tile step large) and ``lower_dma_copies`` (copy loops -> ``vdla.dma_copy2d``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from mlc.target.vdla.affine import (
    Affine,
    access_ptr,
    affine,
    as_int,
    perfect_chain,
    ptr_target,
    rectangle,
    scope_of,
)
from mlc.target.vdla.pass_helpers import _call, _tile_shape
from mlc.tir.arith import simplify
from mlc.tir.expr import (
    BufferLoad,
    Call,
    Cast,
    IntImm,
    PrimExpr,
    Var,
    const,
)
from mlc.tir.functor import IRMutator, IRVisitor
from mlc.tir.stmt import (
    Allocate,
    Buffer,
    BufferStore,
    For,
    PrimFunc,
    Stmt,
)
from mlc.vdla.config import MemScope

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
