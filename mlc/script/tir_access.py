"""Read/write region inference for a block whose ``T.reads`` / ``T.writes`` are left out
(TVM's region detection: accesses under inner loops and nested blocks are relaxed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mlc.errors import MLCError
from mlc.script.tir_syntax import _zero_like
from mlc.tir.analysis import structural_equal
from mlc.tir.arith import Analyzer
from mlc.tir.arith.region import eval_region
from mlc.tir.expr import (
    BufferLoad,
    IntImm,
    Max,
    Min,
    PrimExpr,
    Range,
    Var,
)
from mlc.tir.stmt import (
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    For,
    Stmt,
)


def _infer_access(body: Stmt, init: Stmt | None, allocs: Sequence[Buffer],
                  outer_loops: dict[Var, Range]) -> tuple[list[BufferRegion],
                                                          list[BufferRegion]]:
    """The regions a block body reads and writes (TVM's read/write region detection):
    accesses under inner loops and nested blocks are relaxed over their ranges."""
    reads: dict[int, tuple[Buffer, list[list[Range]]]] = {}
    writes: dict[int, tuple[Buffer, list[list[Range]]]] = {}
    local = {id(b) for b in allocs}
    dom: dict[Var, Range] = {}

    def add(table: dict[int, tuple[Buffer, list[list[Range]]]], buf: Buffer,
            indices: Sequence[PrimExpr]) -> None:
        if id(buf) in local:
            return
        table.setdefault(id(buf), (buf, []))[1].append(_relax(indices, dom, buf))

    def walk(node: Any) -> None:  # noqa: C901
        if isinstance(node, BufferLoad):
            for i in node.indices:
                walk(i)
            add(reads, node.buffer, node.indices)
            return
        if isinstance(node, BufferStore):
            walk(node.value)
            for i in node.indices:
                walk(i)
            add(writes, node.buffer, node.indices)
            return
        if isinstance(node, For):
            dom[node.loop_var] = Range(node.min, node.extent)
            walk(node.body)
            return
        if isinstance(node, BlockRealize):
            for iv, val in zip(node.block.iter_vars, node.iter_values):
                dom[iv.var] = iv.dom
                walk(val)
            for b in node.block.alloc_buffers:
                local.add(id(b))
            for r in node.block.reads:
                reads.setdefault(id(r.buffer), (r.buffer, []))[1].append(
                    _relax_region(r.region, dom))
            for r in node.block.writes:
                writes.setdefault(id(r.buffer), (r.buffer, []))[1].append(
                    _relax_region(r.region, dom))
            return
        if isinstance(node, (Stmt, PrimExpr)):
            for name in getattr(node, "__dataclass_fields__", {}):
                value = getattr(node, name)
                if isinstance(value, (Stmt, PrimExpr)):
                    walk(value)
                elif isinstance(value, tuple):
                    for x in value:
                        if isinstance(x, (Stmt, PrimExpr)):
                            walk(x)

    if init is not None:
        walk(init)
    walk(body)
    written = set(writes)
    read_list = [BufferRegion(b, _hull(rs)) for key, (b, rs) in reads.items()
                 if not (init is not None and key in written)]
    write_list = [BufferRegion(b, _hull(rs)) for b, rs in writes.values()]
    return read_list, write_list


def _relax(indices: Sequence[PrimExpr], dom: dict[Var, Range], buf: Buffer) -> list[Range]:
    used = {v: r for v, r in dom.items() if _mentions(indices, v)}
    if not used:
        return [Range(i, IntImm(1, i.dtype)) for i in indices]
    try:
        return eval_region(list(indices), used, buf.shape)
    except MLCError:
        return [Range(_zero_like(s), s) for s in buf.shape]


def _relax_region(region: Sequence[Range], dom: dict[Var, Range]) -> list[Range]:
    used = {v: r for v, r in dom.items() if _mentions([*(r.min for r in region)], v)}
    if not used:
        return list(region)
    out = []
    ana = Analyzer()
    for r in region:
        lo_r = eval_region([r.min], used)[0]
        out.append(Range(lo_r.min, ana.simplify(lo_r.extent + r.extent - 1)))
    return out


def _mentions(exprs: Sequence[PrimExpr], v: Var) -> bool:
    from mlc.tir.functor import uses_var

    return any(uses_var(e, lambda x: x is v) for e in exprs)


def _hull(regions: list[list[Range]]) -> tuple[Range, ...]:
    first = regions[0]
    if all(all(structural_equal(a.min, b.min) and structural_equal(a.extent, b.extent)
               for a, b in zip(first, r)) for r in regions[1:]):
        return tuple(first)
    ana = Analyzer()
    out = []
    for dims in zip(*regions):
        lo = dims[0].min
        hi = dims[0].min + dims[0].extent
        for r in dims[1:]:
            lo = Min(lo, r.min)
            hi = Max(hi, r.min + r.extent)
        lo_s = ana.simplify(lo)
        out.append(Range(lo_s, ana.simplify(hi - lo_s)))
    return tuple(out)
