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
from mlc.tir.arith.evaluate import evaluate_known
from mlc.tir.arith.region import eval_region
from mlc.tir.expr import (
    BufferLoad,
    Call,
    IntImm,
    IterKind,
    IterVar,
    Let,
    Max,
    Min,
    PrimExpr,
    Range,
    Select,
    Var,
)
from mlc.tir.stmt import (
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    For,
    IfThenElse,
    LetStmt,
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


def check_declared_access(block_name: str, iter_vars: Sequence[IterVar], body: Stmt,
                          init: Stmt | None, allocs: Sequence[Buffer],
                          reads: Sequence[BufferRegion] | None,
                          writes: Sequence[BufferRegion] | None) -> str | None:
    """What a block's explicit ``T.reads`` / ``T.writes`` leave out, or None.

    The schedule trusts the declared regions (``compute_at`` computes a producer only over
    what its consumer declares it reads), so a region that lies gives a wrong answer later.
    Each access of the body that depends on the block's variables alone is evaluated at
    corners of the iteration domain (and of inner loops of constant range); one that falls
    outside every declared region of its buffer is a lie, shown with the point. Accesses
    under a condition or over symbolic domains are not judged (no false alarm: only a
    counterexample refuses)."""
    if not all(isinstance(iv.dom.min, IntImm) and isinstance(iv.dom.extent, IntImm)
               for iv in iter_vars):
        return None
    dims: list[tuple[Var, int, int]] = [
        (iv.var, iv.dom.min.value, iv.dom.extent.value)  # type: ignore[attr-defined]
        for iv in iter_vars]
    own = {id(iv.var) for iv in iter_vars}
    local = {id(b) for b in allocs}
    accesses: list[tuple[str, Buffer, tuple[PrimExpr, ...]]] = []

    def walk(node: Any) -> None:
        if isinstance(node, For) and isinstance(node.min, IntImm) and isinstance(
                node.extent, IntImm) and node.extent.value > 0:
            dims.append((node.loop_var, node.min.value, node.extent.value))
            own.add(id(node.loop_var))
            walk(node.body)
            return
        if isinstance(node, (For, BlockRealize, IfThenElse, Select, LetStmt, Let)):
            return  # symbolic inner loops, nested blocks, conditions: not judged
        if isinstance(node, Call) and node.op == "if_then_else":
            return
        if isinstance(node, (BufferLoad, BufferStore)):
            if id(node.buffer) not in local and all(_only(i, own) for i in node.indices):
                verb = "reads" if isinstance(node, BufferLoad) else "writes"
                accesses.append((verb, node.buffer, tuple(node.indices)))
        if isinstance(node, (Stmt, PrimExpr)):
            for name in getattr(node, "__dataclass_fields__", {}):
                value = getattr(node, name)
                for x in value if isinstance(value, tuple) else (value,):
                    if isinstance(x, (Stmt, PrimExpr)):
                        walk(x)

    if init is not None:
        walk(init)
    walk(body)
    for point in _corners(dims):
        for verb, buf, indices in accesses:
            declared = reads if verb == "reads" else writes
            if declared is None:
                continue
            regions = [r for r in declared if r.buffer is buf]
            if verb == "reads" and writes is not None:  # a reduction reads what it writes
                regions += [r for r in writes if r.buffer is buf]
            where = "T.reads" if verb == "reads" else "T.writes"
            if not regions:
                return (f'block "{block_name}" {verb} {buf.name} but its {where}(...) does not '
                        f"list {buf.name}; list every region the block {verb}, or leave "
                        f"{where} out and mlc infers it")
            idx = [evaluate_known(i, point) for i in indices]
            if any(v is None for v in idx) or any(_covers(r, idx, point) for r in regions):
                continue
            at = ", ".join(f"{v.name} = {point[id(v)]}" for v, _, _ in dims)
            shown = ", ".join(str(i) for i in indices)
            return (f'block "{block_name}" {verb} {buf.name}[{shown}], which is '
                    f"{buf.name}[{', '.join(str(v) for v in idx)}] at {at}, outside the "
                    f"regions its {where}(...) declares; the schedule trusts them, so list "
                    f"every region the block {verb}, or leave {where} out and mlc infers it")
    return None


def _only(e: PrimExpr, own: set[int]) -> bool:
    from mlc.tir.functor import contains

    return not contains(e, lambda n: isinstance(n, (Var, BufferLoad)) and (
        isinstance(n, BufferLoad) or id(n) not in own))


def _corners(dims: Sequence[tuple[Var, int, int]]) -> list[dict[int, int]]:
    """The first, middle and last value of each variable (first and last past four
    variables), at most 256 combinations."""
    import itertools

    choices = []
    for _, lo, n in dims:
        if n <= 0:
            return []  # the block never runs
        choices.append(sorted({lo, lo + n // 2, lo + n - 1}) if len(dims) <= 4
                       else sorted({lo, lo + n - 1}))
    points = []
    for combo in itertools.islice(itertools.product(*choices), 256):
        points.append({id(v): x for (v, _, _), x in zip(dims, combo)})
    return points


def _covers(region: BufferRegion, idx: list[Any], point: dict[int, int]) -> bool:
    for r, i in zip(region.region, idx):
        lo, n = evaluate_known(r.min, point), evaluate_known(r.extent, point)
        if lo is None or n is None:
            return True  # a region we cannot evaluate is not judged
        if not lo <= i < lo + n:
            return False
    return True


def unused_spatial_var(iter_vars: Sequence[IterVar], body: Stmt, init: Stmt | None
                       ) -> IterVar | None:
    """A spatial block variable (extent > 1) that no element the block stores depends on,
    or None. Every value of it writes the same elements: the block is a reduction over it
    (``B[0] = B[0] + A[vk]``) mislabeled spatial, and ``parallel`` or ``vectorize`` on its
    loop, which trust the label, would make the iterations race. Blocks holding blocks or
    let-bindings (a store may depend on the variable through them) or conditions are not
    judged."""
    from mlc.tir.functor import collect

    nodes = [body] + ([init] if init is not None else [])
    if any(collect(n, lambda x: isinstance(x, (BlockRealize, LetStmt, Let, IfThenElse, Select)))
           for n in nodes):
        return None  # a condition may let one value of the variable write (if vk == 0: ...)
    stores = [s for n in nodes for s in collect(n, lambda x: isinstance(x, BufferStore))]
    if not stores:
        return None
    for iv in iter_vars:
        if iv.kind is not IterKind.SPATIAL:
            continue
        if isinstance(iv.dom.extent, IntImm) and iv.dom.extent.value <= 1:
            continue
        v = iv.var
        if not any(_uses(i, v) for s in stores for i in s.indices):
            return iv
    return None


def _uses(e: PrimExpr, v: Var) -> bool:
    from mlc.tir.functor import uses_var

    return uses_var(e, lambda x: x is v)
