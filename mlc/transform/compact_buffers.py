"""``compact_buffers``: allocate each intermediate buffer only as large, and only where,
its uses need.

After ``compute_at`` a cache is written and read inside one tile of the outer loops, but
``create_prim_func`` allocated it for the whole computation. This pass moves the allocation
down to the deepest loop that encloses every access and shrinks it to the region one
iteration touches, shifting indices by the region's start::

    C_local = alloc((32, 32))                for ax0_0 in range(4):
    for ax0_0 in range(4):                       for ax1_0 in range(4):
        for ax1_0 in range(4):          ->           C_local = alloc((8, 8))
            ... C_local[ax0_0*8 + ax0,                ... C_local[ax0, ax1] ...
                        ax1_0*8 + ax1] ...

A small local tile with constant indices (after unrolling) is what lets LLVM keep it in
registers. Moving the allocation inside a loop gives every iteration a fresh buffer, so it
is done only when the iterations touch provably disjoint regions (a value cannot flow from
one iteration to the next): a reduction's accumulator stays outside its reduction loop.
Runs after ``lower_blocks`` and before ``flatten_buffers``; a buffer with explicit strides
(``storage_align``) or accesses it cannot bound is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlc.tir.arith import Analyzer, eval_region
from mlc.tir.expr import BufferLoad, IntImm, PrimExpr, Range, Var, const
from mlc.tir.functor import IRMutator, IRVisitor, substitute
from mlc.tir.stmt import Allocate, Buffer, BufferStore, For, ForKind, PrimFunc, Stmt


def compact_buffers(func: PrimFunc) -> PrimFunc:
    """Shrink and relocate every ``Allocate`` of ``func`` (see the module docstring)."""
    return func.with_body(_Compactor().visit(func.body))


@dataclass
class _Access:
    loops: tuple[For, ...]  # enclosing loops inside the allocation, outermost first
    indices: tuple[PrimExpr, ...]


class _Collector(IRVisitor):
    def __init__(self, buf: Buffer) -> None:
        self.buf = buf
        self.stack: list[For] = []
        self.accesses: list[_Access] = []

    def visit_For(self, op: For) -> None:
        self.visit(op.min)
        self.visit(op.extent)
        self.stack.append(op)
        self.visit(op.body)
        self.stack.pop()

    def visit_BufferLoad(self, op: BufferLoad) -> None:
        if op.buffer.data is self.buf.data:
            self.accesses.append(_Access(tuple(self.stack), op.indices))
        self.generic_visit(op)

    def visit_BufferStore(self, op: BufferStore) -> None:
        if op.buffer.data is self.buf.data:
            self.accesses.append(_Access(tuple(self.stack), op.indices))
        self.generic_visit(op)


class _Compactor(IRMutator):
    def visit_Allocate(self, op: Allocate) -> Stmt:
        body = self.visit(op.body)
        plan = None if op.buffer.strides else _plan(op.buffer, body)
        if plan is None:
            return op if body is op.body else Allocate(op.buffer, body)
        target, new, offsets = plan
        body = _Reindex(op.buffer, new, offsets).visit(body)
        if target is None:
            return Allocate(new, body)
        return _AllocateInside(target, new).visit(body)  # type: ignore[no-any-return]


def _plan(
    buf: Buffer, body: Stmt
) -> tuple[Var | None, Buffer, tuple[PrimExpr, ...]] | None:
    """Where to allocate ``buf`` (inside which loop; None: where it is), its new buffer,
    and the offset to subtract from each index; None when nothing would change."""
    collector = _Collector(buf)
    collector.visit(body)
    accesses = collector.accesses
    if not accesses:
        return None
    prefix = list(accesses[0].loops)
    for acc in accesses[1:]:
        n = 0
        while n < min(len(prefix), len(acc.loops)) and prefix[n] is acc.loops[n]:
            n += 1
        del prefix[n:]
    if buf.scope == "shared":  # shared memory is one per thread block, never per thread
        for n, f in enumerate(prefix):
            if f.kind is ForKind.THREAD_BINDING and (f.thread_binding or "").startswith("thread"):
                del prefix[n:]
                break
    for depth in range(len(prefix), -1, -1):
        region = _union_region(buf, accesses, prefix[:depth])
        if region is None:
            continue
        if all(_disjoint_iterations(buf, accesses, prefix[: t + 1]) for t in range(depth)):
            offsets = tuple(r.min for r in region)
            shape = tuple(r.extent for r in region)
            same_shape = all(
                isinstance(a, IntImm) and isinstance(b, IntImm) and a.value == b.value
                for a, b in zip(shape, buf.shape)
            )
            if depth == 0 and same_shape:
                return None
            new = Buffer(buf.name, shape, buf.dtype, buf.scope)
            return (prefix[depth - 1].loop_var if depth else None), new, offsets
    return None


def _union_region(
    buf: Buffer, accesses: list[_Access], outer: list[For]
) -> list[Range] | None:
    """Per dimension, the constant-size range that covers every access while the loops in
    ``outer`` are fixed (the others vary over their ranges); None if it cannot be bounded."""
    ana = Analyzer()
    for loop in outer:
        ana.bind(loop.loop_var, Range(loop.min, loop.extent))
    lows: list[PrimExpr | None] = [None] * len(buf.shape)
    spans: list[tuple[int, int]] = [(0, 0)] * len(buf.shape)
    for acc in accesses:
        inner = {f.loop_var: Range(f.min, f.extent) for f in acc.loops[len(outer):]}
        region = eval_region(acc.indices, inner, buf.shape, ana)
        for d, r in enumerate(region):
            hi = ana.const_int_bound(r.extent)[1]
            if not isinstance(hi, int):
                return None
            base = lows[d]
            if base is None:
                lows[d], spans[d] = r.min, (0, hi)
                continue
            shift = ana.simplify(r.min - base)
            if not isinstance(shift, IntImm):
                return None
            lo, top = spans[d]
            spans[d] = (min(lo, shift.value), max(top, shift.value + hi))
    out: list[Range] = []
    for base, (lo, top) in zip(lows, spans):
        assert base is not None
        out.append(Range(ana.simplify(base + lo), const(top - lo)))
    return out


def _disjoint_iterations(buf: Buffer, accesses: list[_Access], outer: list[For]) -> bool:
    """Do different iterations of ``outer[-1]`` touch disjoint parts of ``buf``? True when
    in some dimension the region moves by at least its size from one iteration to the next."""
    region = _union_region(buf, accesses, outer)
    if region is None:
        return False
    loop = outer[-1]
    ana = Analyzer()
    for f in outer:
        ana.bind(f.loop_var, Range(f.min, f.extent))
    for r in region:
        step = ana.simplify(substitute(r.min, {loop.loop_var: loop.loop_var + 1}) - r.min)
        if isinstance(step, IntImm) and isinstance(r.extent, IntImm):
            if abs(step.value) >= r.extent.value > 0:
                return True
    return False


class _Reindex(IRMutator):
    def __init__(self, old: Buffer, new: Buffer, offsets: tuple[PrimExpr, ...]) -> None:
        self.old, self.new, self.offsets = old, new, offsets

    def _shift(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        return tuple(
            i if isinstance(o, IntImm) and o.value == 0 else i - o
            for i, o in zip(indices, self.offsets)
        )

    def visit_BufferLoad(self, op: BufferLoad) -> PrimExpr:
        indices = tuple(self.visit(i) for i in op.indices)
        if op.buffer.data is not self.old.data:
            return op if all(a is b for a, b in zip(indices, op.indices)) else BufferLoad(
                op.buffer, indices, op.dtype
            )
        return BufferLoad(self.new, self._shift(indices), op.dtype)

    def visit_BufferStore(self, op: BufferStore) -> Stmt:
        value = self.visit(op.value)
        indices = tuple(self.visit(i) for i in op.indices)
        if op.buffer.data is not self.old.data:
            return BufferStore(op.buffer, value, indices)
        return BufferStore(self.new, value, self._shift(indices))


class _AllocateInside(IRMutator):
    def __init__(self, loop_var: Var, buf: Buffer) -> None:
        self.loop_var, self.buf = loop_var, buf

    def visit_For(self, op: For) -> Stmt:
        if op.loop_var is self.loop_var:
            return For(op.loop_var, op.min, op.extent, op.kind, Allocate(self.buf, op.body),
                       op.thread_binding, op.annotations)
        return self.generic_visit(op)  # type: ignore[no-any-return]
