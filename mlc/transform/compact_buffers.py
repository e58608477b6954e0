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
from typing import cast

import numpy as np

from mlc.tir.arith import Analyzer, eval_region
from mlc.tir.arith.evaluate import evaluate_known
from mlc.tir.arith.linear import to_linear
from mlc.tir.expr import (
    GE,
    GT,
    LE,
    LT,
    And,
    BufferLoad,
    Call,
    IntImm,
    PrimExpr,
    Range,
    Var,
    as_int,
    conjuncts,
    const,
)
from mlc.tir.functor import IRMutator, IRVisitor, post_order_visit, substitute, uses_var
from mlc.tir.stmt import Allocate, Buffer, BufferStore, For, ForKind, IfThenElse, PrimFunc, Stmt


def compact_buffers(func: PrimFunc) -> PrimFunc:
    """Shrink and relocate every ``Allocate`` of ``func`` (see the module docstring)."""
    return func.with_body(_Compactor().visit(func.body))


@dataclass
class _Access:
    loops: tuple[For, ...]  # enclosing loops inside the allocation, outermost first
    indices: tuple[PrimExpr, ...]
    guards: tuple[PrimExpr, ...] = ()  # conditions of the `if`s around it
    store: bool = False


_Touched = dict[int, tuple[For, frozenset[Var]]]


def _data_vars(loop: For, memo: _Touched) -> frozenset[Var]:
    """The data variables of the buffers ``loop`` loads, stores or passes on, remembered per
    loop object: a chain of hundreds of stages is one sequence of loops that each
    allocation's collector would otherwise walk whole (quadratic in the stages)."""
    hit = memo.get(id(loop))
    if hit is not None and hit[0] is loop:
        return hit[1]
    found: set[Var] = set()

    def note(n: object) -> None:
        if isinstance(n, (BufferLoad, BufferStore)):
            found.add(n.buffer.data)

    post_order_visit(loop, note)
    memo[id(loop)] = (loop, frozenset(found))
    return memo[id(loop)][1]


class _Collector(IRVisitor):
    def __init__(self, buf: Buffer, memo: _Touched | None = None) -> None:
        self.buf = buf
        self.memo: _Touched = {} if memo is None else memo
        self.stack: list[For] = []
        self.guards: list[PrimExpr] = []
        self.accesses: list[_Access] = []
        self.opaque = False  # passed whole to a packed function: leave it as it is

    def visit_Call(self, op: Call) -> None:
        if op.op == "buffer_arg" and isinstance(op.args[0], BufferLoad):
            self.opaque = self.opaque or op.args[0].buffer.data is self.buf.data
        self.generic_visit(op)

    def visit_For(self, op: For) -> None:
        if self.buf.data not in _data_vars(op, self.memo):
            return  # (a Call's buffer_arg is a BufferLoad too: opaque uses are seen)
        self.visit(op.min)
        self.visit(op.extent)
        self.stack.append(op)
        self.visit(op.body)
        self.stack.pop()

    def visit_IfThenElse(self, op: IfThenElse) -> None:
        self.visit(op.condition)
        self.guards.append(op.condition)
        self.visit(op.then_case)
        self.guards.pop()
        if op.else_case is not None:
            self.visit(op.else_case)

    def _add(self, indices: tuple[PrimExpr, ...], store: bool = False) -> None:
        self.accesses.append(_Access(tuple(self.stack), indices, tuple(self.guards), store))

    def visit_BufferLoad(self, op: BufferLoad) -> None:
        if op.buffer.data is self.buf.data:
            self._add(op.indices)
        self.generic_visit(op)

    def visit_BufferStore(self, op: BufferStore) -> None:
        self.generic_visit(op)  # the value is read before the store writes: program order
        if op.buffer.data is self.buf.data:
            self._add(op.indices, store=True)


class _Compactor(IRMutator):
    def __init__(self) -> None:
        super().__init__()
        self.memo: _Touched = {}

    def visit_Allocate(self, op: Allocate) -> Stmt:
        body = self.visit(op.body)
        plan = None if op.buffer.strides else _plan(op.buffer, body, self.memo)
        if plan is None:
            return op if body is op.body else Allocate(op.buffer, body)
        target, new, offsets = plan
        body = _Reindex(op.buffer, new, offsets).visit(body)
        if target is None:
            return Allocate(new, body)
        return _AllocateInside(target, new).visit(body)  # type: ignore[no-any-return]


def _tag(f: For) -> str:
    return (f.thread_binding or "") if f.kind is ForKind.THREAD_BINDING else ""


def _private_copy(buf: Buffer, f: For) -> bool:
    """Does each iteration of ``f`` get its own copy of ``buf`` anyway? On a GPU, shared
    memory is one per thread block (blockIdx) and local memory one per thread."""
    base = buf.scope.partition(".")[0]
    if base == "shared":
        return _tag(f).startswith("blockIdx.")
    if base == "local":
        return _tag(f).startswith(("blockIdx.", "threadIdx."))
    return False


def _plan(
    buf: Buffer, body: Stmt, memo: _Touched | None = None
) -> tuple[Var | None, Buffer, tuple[PrimExpr, ...]] | None:
    """Where to allocate ``buf`` (inside which loop; None: where it is), its new buffer,
    and the offset to subtract from each index; None when nothing would change.

    A ``"shared"`` buffer is one per thread block: it is never allocated inside a
    ``threadIdx`` loop and its region covers every thread's accesses, but it may still be
    as small as what one iteration of a serial loop inside the threads touches (the tile of
    a cooperative fetch): the index is shifted by that iteration's start."""
    collector = _Collector(buf, memo)
    collector.visit(body)
    accesses = collector.accesses
    if not accesses or collector.opaque:
        return None
    prefix = list(accesses[0].loops)
    for acc in accesses[1:]:
        n = 0
        while n < min(len(prefix), len(acc.loops)) and prefix[n] is acc.loops[n]:
            n += 1
        del prefix[n:]
    shared = buf.scope.partition(".")[0] == "shared"
    cut = len(prefix)
    if shared:  # shared memory is one per thread block, never per thread
        cut = next((n for n, f in enumerate(prefix) if _tag(f).startswith("thread")), cut)
    regions: dict[int, list[Range] | None] = {}

    def region_of(fixed: list[For]) -> list[Range] | None:  # memoized by depth
        if len(fixed) not in regions:
            regions[len(fixed)] = _union_region(buf, accesses, fixed)
        return regions[len(fixed)]

    for depth in range(len(prefix), -1, -1):
        fixed = [f for f in prefix[:depth] if not (shared and _tag(f).startswith("thread"))]
        region = region_of(fixed)
        if region is None:
            continue
        # each iteration of the innermost fixed loop writing first what it reads means no
        # value flows between the iterations of any fixed loop
        if (fixed and _written_first(accesses, fixed, region, buf.shape)) or all(
            _private_copy(buf, f)
            or _disjoint_iterations(fixed[: t + 1], region_of(fixed[: t + 1]))
            for t, f in enumerate(fixed)
        ):
            offsets = tuple(r.min for r in region)
            shape = tuple(r.extent for r in region)
            same_shape = all(
                isinstance(a, IntImm) and isinstance(b, IntImm) and a.value == b.value
                for a, b in zip(shape, buf.shape)
            )
            place = min(depth, cut)
            if place == 0 and same_shape:
                return None
            scope = buf.scope
            if scope == "global" and any(_tag(f).startswith("threadIdx.") for f in prefix[:place]):
                scope = "local"  # one copy per GPU thread, as te gives an intermediate there
            new = Buffer(buf.name, shape, buf.dtype, scope)
            return (prefix[place - 1].loop_var if place else None), new, offsets
    return None


def _union_region(
    buf: Buffer, accesses: list[_Access], fixed: list[For]
) -> list[Range] | None:
    """Per dimension, the constant-size range that covers every access while the loops in
    ``fixed`` are fixed (the others vary over their ranges, within the guards around the
    access); None if it cannot be bounded."""
    ana = Analyzer()
    for loop in fixed:
        ana.bind(loop.loop_var, Range(loop.min, loop.extent))
    lows: list[PrimExpr | None] = [None] * len(buf.shape)
    spans: list[tuple[int, int]] = [(0, 0)] * len(buf.shape)
    for acc in accesses:
        inner = {
            f.loop_var: Range(f.min, f.extent)
            for f in acc.loops
            if not any(f is g for g in fixed)
        }
        inner = _guarded_ranges(inner, acc.guards, fixed)
        region = eval_region(acc.indices, inner, buf.shape, ana)
        for d, r in enumerate(region):
            hi = ana.const_int_bound(r.extent)[1]
            if not isinstance(hi, int):
                return None
            hi = _guarded_extent(acc.indices[d], r, hi, acc.guards, list(inner), ana)
            hi = _enumerated_extent(acc.indices[d], r, hi, acc.guards, inner, ana)
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


def _conjuncts(guards: tuple[PrimExpr, ...]) -> list[PrimExpr]:
    return [part for g in guards for part in conjuncts(g)]


def _guarded_ranges(
    inner: dict[Var, Range], guards: tuple[PrimExpr, ...], fixed: list[For]
) -> dict[Var, Range]:
    """``inner`` with the constant ranges of its loops narrowed by the linear guards around
    the access (``sum(c * x) + rest < k`` gives ``x <= (k - 1 - min(rest)) // c`` for
    ``c > 0``). A cooperative copy split into threads x lanes wider than its tile is guarded
    by ``f0 * 256 + t * 4 + v < 128``: ``t`` only reaches 31, so the rows ``t // 4`` of the
    tile are 8, not 16, whatever the number of iterations."""
    parts = []
    for g in _conjuncts(guards):  # each as ``lin <= 0``
        if isinstance(g, LT):
            parts.append(to_linear(g.a - g.b + 1))
        elif isinstance(g, LE):
            parts.append(to_linear(g.a - g.b))
        elif isinstance(g, GT):
            parts.append(to_linear(g.b - g.a + 1))
        elif isinstance(g, GE):
            parts.append(to_linear(g.b - g.a))
    if not parts:
        return inner
    out = dict(inner)
    for _ in range(2):  # a narrowed loop may narrow another
        ana = Analyzer()
        for f in fixed:
            ana.bind(f.loop_var, Range(f.min, f.extent))
        ana.bind_all(out)
        for lin in parts:
            lows = []  # the least value of each term
            for atom, coef in lin.terms.values():
                lo, hi = ana.const_int_bound(atom)
                lows.append(coef * (lo if coef > 0 else hi))
            for n, (atom, coef) in enumerate(lin.terms.values()):
                var = next((v for v in out if v is atom), None)
                if var is None:
                    continue
                lo, ext = as_int(out[var].min), as_int(out[var].extent)
                rest = lin.const + sum(x for m, x in enumerate(lows) if m != n)
                if lo is None or ext is None or not isinstance(rest, int):
                    continue  # an unbounded term: nothing to learn
                hi = lo + ext - 1
                if coef > 0:
                    hi = min(hi, -rest // coef)  # coef * x <= -rest
                else:
                    lo = max(lo, -(-rest // -coef))  # -coef * x >= rest
                if hi < lo:
                    return inner  # the access never runs: keep the plain ranges
                out[var] = Range(const(lo, var.dtype), const(hi - lo + 1, var.dtype))
    return out


def _guarded_extent(
    index: PrimExpr,
    region: Range,
    extent: int,
    guards: tuple[PrimExpr, ...],
    relaxed: list[Var],
    ana: Analyzer,
) -> int:
    """``extent``, or less where a guard ``e < c`` around the access bounds ``index`` from
    above (``index - e`` not varying with the relaxed loops): the tail of a non-dividing
    split touches nothing past the end."""
    best = extent
    for g in _conjuncts(guards):
        if isinstance(g, LT):
            top = g.b - 1
        elif isinstance(g, LE):
            top = g.b
        else:
            continue
        shift = ana.simplify(index - g.a)
        if uses_var(shift, lambda v: any(v is r for r in relaxed)):
            continue
        n = ana.simplify(top + shift - region.min + 1)
        if isinstance(n, IntImm) and 0 < n.value < best:
            best = n.value
    return best


_MAX_ENUMERATED = 1 << 12


def _enumerated_extent(
    index: PrimExpr,
    region: Range,
    extent: int,
    guards: tuple[PrimExpr, ...],
    inner: dict[Var, Range],
    ana: Analyzer,
) -> int:
    """``extent``, or less when trying every value of the relaxed loops (a few thousand at
    most, constant ranges) shows that the guards around the access keep ``index`` lower: a
    cooperative copy split into threads x vector lanes wider than the tile is guarded by
    ``fused < 64`` while its index is ``fused // 8``, which the guard bounds by 7 (the shared
    tile is 8 rows, not threads * lanes / 8)."""
    if not guards or not inner:
        return extent
    total = 1
    for r in inner.values():
        if not (isinstance(r.min, IntImm) and isinstance(r.extent, IntImm)):
            return extent
        total *= max(r.extent.value, 0)
    if total == 0 or total > _MAX_ENUMERATED:
        return extent
    offset = ana.simplify(index - region.min)
    variables = list(inner)
    if not uses_var(offset, lambda v: any(v is x for x in variables)) or uses_var(
        offset, lambda v: not any(v is x for x in variables)
    ):
        return extent  # depends on loops outside the region: the shift is not constant
    parts: list[PrimExpr] = []
    todo = list(guards)
    while todo:  # conjuncts, each evaluated on whole arrays of loop values
        g = todo.pop()
        if isinstance(g, And):
            todo += [g.a, g.b]
        else:
            parts.append(g)
    own = [g for g in parts if not uses_var(g, lambda v: not any(v is x for x in variables))]
    if not own:
        return extent
    axes = [np.arange(as_int(r.min) or 0, (as_int(r.min) or 0) + (as_int(r.extent) or 0))
            for r in inner.values()]  # fmt: skip
    grids = np.meshgrid(*axes, indexing="ij")
    env = {id(v): g.ravel() for v, g in zip(variables, grids)}
    try:
        keep = np.ones(total, dtype=bool)
        for g in own:
            ok = evaluate_known(g, env)
            if ok is None:
                return extent
            keep &= np.broadcast_to(np.asarray(ok, dtype=bool), (total,))
        found = evaluate_known(offset, env)
        if found is None:
            return extent
        values = np.broadcast_to(np.asarray(found, dtype=np.int64), (total,))
    except Exception:  # noqa: BLE001 - an expression numpy cannot evaluate: keep the bound
        return extent
    if not keep.any():
        return extent
    return min(extent, int(values[keep].max()) + 1)


def _disjoint_iterations(fixed: list[For], region: list[Range] | None) -> bool:
    """Do different iterations of ``fixed[-1]`` touch disjoint parts of the buffer whose
    ``region`` they touch? True when in some dimension the region moves by at least its size
    from one iteration to the next."""
    if region is None:
        return False
    loop = fixed[-1]
    ana = Analyzer()
    for f in fixed:
        ana.bind(f.loop_var, Range(f.min, f.extent))
    for r in region:
        step = ana.simplify(substitute(r.min, {loop.loop_var: loop.loop_var + 1}) - r.min)
        if isinstance(step, IntImm) and isinstance(r.extent, IntImm):
            if abs(step.value) >= r.extent.value > 0:
                return True
    return False


def _written_first(
    accesses: list[_Access], fixed: list[For], region: list[Range],
    shape: tuple[PrimExpr, ...],
) -> bool:
    """Does every iteration of ``fixed[-1]`` first write, in a loop nest of its own, all of
    the region it then touches? (A packed copy made inside the loop, as ``cache_read`` +
    ``compute_at`` give: no value flows from one iteration to the next, so each iteration
    may have its own buffer -- one per thread under a parallel loop.) The copy may be
    guarded where its guards only cut off what lies past the end of the buffer (the last
    block of a split that does not divide the rows): no access reads there."""
    first = accesses[0]
    if not first.store or not _guards_cut_off_the_end(first, shape):
        return False
    depth = len(fixed)
    inner = list(first.loops[depth:])
    if inner and any(inner[0] in acc.loops for acc in accesses[1:] if not acc.store):
        return False  # loads inside the writing nest could read an older iteration's value
    ana = Analyzer()
    for f in fixed:
        ana.bind(f.loop_var, Range(f.min, f.extent))
    used: set[Var] = set()
    for index, r in zip(first.indices, region):
        own = [f for f in inner if _uses_loop(index, f)]
        if any(f.loop_var in used for f in own):
            return False
        used |= {f.loop_var for f in own}
        covered = _dense_range(index, own, ana)
        if covered is None:
            return False
        lo, extent = covered
        if not (_is_zero(ana.simplify(lo - r.min)) and _is_zero(ana.simplify(extent - r.extent))):
            return False
    return True


def _guards_cut_off_the_end(acc: _Access, shape: tuple[PrimExpr, ...]) -> bool:
    """Is every guard of ``acc`` of the form ``index[d] + c < shape[d] + c`` (or weaker:
    false only where ``index[d]`` is past the end of dimension ``d``)?"""
    ana = Analyzer()
    for g in _conjuncts(acc.guards):
        if isinstance(g, LT):
            a, b = g.a, g.b
        elif isinstance(g, LE):
            a, b = g.a, g.b + 1
        else:
            return False
        for index, extent in zip(acc.indices, shape):
            shift = ana.simplify(index - a)  # index = a + shift
            if not isinstance(shift, IntImm):
                continue
            # the guard fails when a >= b, i.e. index >= b + shift: past the end?
            past = ana.simplify(b + shift - extent)
            if isinstance(past, IntImm) and past.value >= 0:
                break
        else:
            return False
    return True


def _dense_range(index: PrimExpr, loops: list[For], ana: Analyzer) -> tuple[PrimExpr, int] | None:
    """``(lo, n)`` when ``index`` takes every value of ``[lo, lo + n)`` as ``loops`` run
    (``lo + v0 + e0 * v1 + e0 * e1 * v2 ...``: a split loop nest walking a range densely);
    None otherwise."""
    lo = ana.simplify(substitute(index, {f.loop_var: f.min for f in loops}))
    terms = []
    for f in loops:
        step = ana.simplify(substitute(index, {f.loop_var: f.loop_var + 1}) - index)
        if not isinstance(step, IntImm) or not isinstance(f.extent, IntImm):
            return None
        terms.append((step.value, f))
    terms.sort(key=lambda t: t[0])
    rest: PrimExpr = index - lo
    expected = 1
    for stride, f in terms:
        if stride != expected:
            return None
        rest = rest - stride * (f.loop_var - f.min)
        expected *= cast(IntImm, f.extent).value
    if not _is_zero(ana.simplify(rest)):
        return None
    return lo, expected


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0


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


def _uses_loop(e: PrimExpr, f: For) -> bool:
    var = f.loop_var
    return uses_var(e, lambda v: v is var)
