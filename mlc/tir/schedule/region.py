"""What the block primitives need to know about a program: who reads and writes which buffer,
which part of a buffer the blocks under a loop touch, and small tree edits.

The central question of ``compute_at`` is "which part of ``B`` do the consumers under loop
``j`` read during one iteration of ``j``?". The answer comes from each consumer's read region
(written with its block iteration variables), with the block's bindings substituted (now in
loop variables) and the loops *inside* ``j`` relaxed over their ranges::

    for i in range(16):
        for j in range(4):                 # the loop we ask about
            for jj in range(4):
                with block("C"):
                    vi = axis.spatial(16, i)
                    vj = axis.spatial(16, j * 4 + jj)
                    reads(B[vi, vj])

    relaxed_region(...)  ->  [i : i + 1, j * 4 : j * 4 + 4]      (jj relaxed over 0..3)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mlc.tir.arith import Analyzer, eval_region
from mlc.tir.expr import BufferLoad, IntImm, Max, Min, PrimExpr, Range, Var, const
from mlc.tir.functor import IRMutator, post_order_visit, substitute, uses_var
from mlc.tir.schedule import state
from mlc.tir.stmt import (
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    For,
    PrimFunc,
    SeqStmt,
    Stmt,
)

# ---------------------------------------------------------------------------------------------
# blocks, in program order


@dataclass(frozen=True)
class BlockInfo:
    """A block of the function with its place in program order."""

    index: int
    loc: state.Location

    @property
    def realize(self) -> BlockRealize:
        return self.loc.stmt  # type: ignore[return-value]

    @property
    def block(self) -> Block:
        return self.realize.block

    @property
    def reads(self) -> set[Buffer]:
        return {r.buffer for r in self.block.reads}

    @property
    def writes(self) -> set[Buffer]:
        return {r.buffer for r in self.block.writes}

    def under(self, node: Stmt) -> bool:
        """True when this block is inside ``node`` (by identity)."""
        return any(p is node for p in self.loc.path)


def blocks_in_order(func: PrimFunc) -> list[BlockInfo]:
    """Every block except the root, in program order."""
    return [BlockInfo(k, loc) for k, loc in enumerate(state.all_blocks(func))]


def info_of(infos: list[BlockInfo], realize: BlockRealize) -> BlockInfo:
    for info in infos:
        if info.realize is realize:
            return info
    raise KeyError(realize.block.name)


def conflicts(moved: BlockInfo, other: BlockInfo) -> set[Buffer]:
    """Buffers through which ``other`` depends on ``moved`` or the other way round: swapping
    their order would change what one of them sees."""
    return (moved.reads & other.writes) | (moved.writes & (other.reads | other.writes))


# ---------------------------------------------------------------------------------------------
# regions


def _bindings(realize: BlockRealize) -> dict[Var, PrimExpr]:
    return {iv.var: v for iv, v in zip(realize.block.iter_vars, realize.iter_values)}


def inner_loops(loc: state.Location, loop: For) -> list[For]:
    """The loops strictly between ``loop`` and the statement at ``loc``, outermost first."""
    out: list[For] = []
    seen = False
    for node in loc.path:
        if node is loop:
            seen = True
        elif seen and isinstance(node, For):
            out.append(node)
    return out


def outer_analyzer(loop_loc: state.Location, include_self: bool = True) -> Analyzer:
    """An analyzer that knows the ranges of the loops around (and, by default, of) a loop."""
    ana = Analyzer()
    loops = [n for n in loop_loc.path if isinstance(n, For)]
    if include_self and isinstance(loop_loc.stmt, For):
        loops.append(loop_loc.stmt)
    for f in loops:
        ana.bind(f.loop_var, Range(f.min, f.extent))
    return ana


def relaxed_region(
    region: BufferRegion,
    realize: BlockRealize,
    relax: Sequence[For],
    ana: Analyzer,
) -> list[tuple[PrimExpr, PrimExpr]]:
    """Inclusive ``(lo, hi)`` per dimension of ``region`` (a region of ``realize``'s block)
    when the loops ``relax`` run over their ranges; other loop variables stay symbolic."""
    binding = _bindings(realize)
    dom = {f.loop_var: Range(f.min, f.extent) for f in relax}
    out: list[tuple[PrimExpr, PrimExpr]] = []
    for d, rng in enumerate(region.region):
        first = substitute(rng.min, binding)
        last = substitute(rng.min + rng.extent - 1, binding)
        shape = [region.buffer.shape[d]]
        (r_lo,) = eval_region([first], dom, shape, ana)
        (r_hi,) = eval_region([last], dom, shape, ana)
        out.append((r_lo.min, ana.simplify(r_hi.min + r_hi.extent - 1)))
    return out


def union_bounds(
    a: list[tuple[PrimExpr, PrimExpr]], b: list[tuple[PrimExpr, PrimExpr]], ana: Analyzer
) -> list[tuple[PrimExpr, PrimExpr]]:
    """Per dimension, the smallest ``(lo, hi)`` covering both."""
    out = []
    for (lo1, hi1), (lo2, hi2) in zip(a, b):
        out.append((_pick(lo1, lo2, ana, Min), _pick(hi1, hi2, ana, Max)))
    return out


def _pick(x: PrimExpr, y: PrimExpr, ana: Analyzer, op: type) -> PrimExpr:
    diff = ana.simplify(x - y)
    if isinstance(diff, IntImm):
        take_x = diff.value <= 0 if op is Min else diff.value >= 0
        return x if take_x else y
    return ana.simplify(op(x, y))


# ---------------------------------------------------------------------------------------------
# rewriting


class BufferReplacer(IRMutator):
    """Every use of a buffer in ``mapping`` (loads, stores, regions, allocations) becomes the
    buffer it maps to."""

    def __init__(self, mapping: dict[Buffer, Buffer]) -> None:
        self.mapping = mapping

    def visit_Buffer(self, node: Buffer) -> Any:
        return self.mapping.get(node, node)


def replace_buffers(node: Any, mapping: dict[Buffer, Buffer]) -> Any:
    """``node`` (a node or a tuple of nodes) with the buffers of ``mapping`` replaced."""
    if isinstance(node, tuple):
        return tuple(BufferReplacer(mapping).visit(n) for n in node)
    return BufferReplacer(mapping).visit(node)


def loads_of(node: Any, buffer: Buffer) -> list[BufferLoad]:
    found: list[BufferLoad] = []

    def visit(n: Any) -> None:
        if isinstance(n, BufferLoad) and n.buffer is buffer:
            found.append(n)

    post_order_visit(node, visit)
    return found


def buffer_used(node: Any, buffer: Buffer) -> bool:
    """True when ``buffer`` is loaded or stored under ``node``."""
    found = False

    def visit(n: Any) -> None:
        nonlocal found
        if isinstance(n, (BufferLoad, BufferStore)) and n.buffer is buffer:
            found = True
        if isinstance(n, BufferRegion) and n.buffer is buffer:
            found = True

    post_order_visit(node, visit)
    return found


def mentions(node: Any, variables: Iterable[Var]) -> bool:
    ids = {id(v) for v in variables}
    nodes = node if isinstance(node, (list, tuple)) else [node]
    return any(uses_var(n, lambda v: id(v) in ids) for n in nodes)


def exclusive_top(loc: state.Location) -> Stmt:
    """The outermost statement above ``loc`` that contains nothing but ``loc.stmt``: the
    loop nest that disappears when the block moves away."""
    top: Stmt = loc.stmt
    for node in reversed(loc.path):
        if isinstance(node, For) and node.body is top:
            top = node
        else:
            break
    return top


def body_items(body: Stmt) -> list[Stmt]:
    return list(body.seq) if isinstance(body, SeqStmt) else [body]


def contains(node: Stmt, target: Stmt) -> bool:
    return any(loc.stmt is target for loc in state.walk(node))


def root_block(func: PrimFunc) -> Block:
    body = func.body
    if isinstance(body, BlockRealize):
        return body.block
    raise KeyError("root")


def merge_regions(
    regions: Sequence[BufferRegion], ana: Analyzer | None = None
) -> tuple[BufferRegion, ...]:
    """One region per buffer covering all of ``regions`` (first appearance order)."""
    ana = ana or Analyzer()
    order: list[Buffer] = []
    merged: dict[Buffer, list[tuple[PrimExpr, PrimExpr]]] = {}
    for r in regions:
        bounds = [(rng.min, ana.simplify(rng.min + rng.extent - 1)) for rng in r.region]
        if r.buffer not in merged:
            order.append(r.buffer)
            merged[r.buffer] = bounds
        else:
            merged[r.buffer] = union_bounds(merged[r.buffer], bounds, ana)
    out = []
    for buf in order:
        out.append(
            BufferRegion(
                buf,
                tuple(Range(lo, ana.simplify(hi - lo + 1)) for lo, hi in merged[buf]),
            )
        )
    return tuple(out)


def point_region(buffer: Buffer, indices: Sequence[PrimExpr]) -> BufferRegion:
    return BufferRegion(buffer, tuple(Range(i, const(1, i.dtype)) for i in indices))


class _AllocEditor(IRMutator):
    def __init__(self, drop: Buffer | None, add: Buffer | None) -> None:
        self.drop, self.add, self.done = drop, add, False

    def visit_Block(self, node: Block) -> Any:
        allocs = node.alloc_buffers
        if self.drop is not None and any(b is self.drop for b in allocs):
            allocs = tuple(b for b in allocs if b is not self.drop)
        if self.add is not None and not self.done:
            allocs = (*allocs, self.add)  # the outermost (root) block gets it
            self.done = True
        new = self.generic_visit(node)
        if allocs is node.alloc_buffers:
            return new
        return _replace(new, alloc_buffers=allocs)


def _replace(node: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(node, **changes)


def drop_alloc(func: PrimFunc, buffer: Buffer) -> PrimFunc:
    """``func`` without the allocation of ``buffer`` (wherever it is)."""
    return func.with_body(_AllocEditor(buffer, None).visit(func.body))


def add_root_alloc(func: PrimFunc, buffer: Buffer) -> PrimFunc:
    """``func`` with ``buffer`` allocated in its root block."""
    return func.with_body(_AllocEditor(None, buffer).visit(func.body))
