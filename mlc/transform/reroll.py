"""``reroll_sums``: a long sum built term by term in Python becomes loops again.

A student who writes ::

    def f(i):
        e = A[0] * 0.5
        for t in range(1, 10000):
            e = e + A[t] * 0.5
        return e
    B = te.compute((1,), f)

builds one expression of 10,000 terms. The operators keep it shallow (runs of 32 terms
added left to right, the runs summed pairwise: :func:`mlc.tir.expr_ops.chain`), but every
pass still walks 40,000 nodes, the code generator emits 30,000 instructions in one basic
block, and LLVM spends most of a minute on it. The terms of a run differ only in integer
constants that step evenly (``A[0]``, ``A[1]``, ...), so each run is a loop in disguise,
and the runs themselves step evenly::

    B[0] = ((A[0] * 0.5 + A[1] * 0.5 + ... + A[31] * 0.5) + (A[32] * 0.5 + ...)) + ...

becomes ::

    B_run = alloc_buffer((312,), "float32", scope="local")
    for r in range(312):
        B_run[r] = A[r * 32] * 0.5
        for t in range(31):
            B_run[r] = B_run[r] + A[r * 32 + t + 1] * 0.5
    B[0] = ((B_run[0] + B_run[1]) + (B_run[2] + B_run[3])) + ... + A[9984] * 0.5 + ...

The additions keep their order and grouping (floating-point addition is never
reassociated), so the result is the same, up to multiply-adds LLVM may fuse (as it may
unrolled); one node per run is left of the tree. A run at the bottom of a chain starts
from its first term, one on top of other terms (the last, unfinished run) from the sum
below it. Only a store's value (and the sums inside it) is rerolled, never a condition's
branch (it may not run), and only stores of at least :data:`MIN_ADDS` additions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from mlc.tir import dtype as dt
from mlc.tir.expr import Add, BufferLoad, Cast, IntImm, Mul, PrimExpr, Var, const
from mlc.tir.functor import IRMutator, substitute
from mlc.tir.stmt import Allocate, Buffer, BufferStore, For, ForKind, PrimFunc, Stmt, seq

MIN_ADDS = 256  # a store with fewer additions is left as it is
MIN_TERMS = 16  # the shortest run of one shape made a loop
_MAX_TERM_DEPTH = 64


def reroll_sums(func: PrimFunc) -> PrimFunc:
    """Every store whose value adds at least :data:`MIN_ADDS` terms, with runs of at least
    :data:`MIN_TERMS` terms of one shape whose integer constants step evenly, computes those
    runs in loops (same order of additions, same result)."""
    body = _Reroller().visit(func.body)
    return func if body is func.body else func.with_body(body)


@dataclasses.dataclass
class _Segment:
    """Terms ``T(base + n * step)`` for ``n < count`` added one by one, onto ``init`` (None:
    onto the first term itself, a run at the bottom of its chain)."""

    key: Any
    base: list[int]
    step: list[int]
    count: int
    term: PrimExpr
    init: PrimExpr | None
    slot: Var


class _Reroller(IRMutator):
    def __init__(self) -> None:
        self.count = 0

    def visit_BufferStore(self, op: BufferStore) -> Any:
        value, segments = op.value, list[_Segment]()
        if (not isinstance(value, Add) or dt.lanes(value.dtype) != 1
                or _count_adds(value, MIN_ADDS) < MIN_ADDS):
            return op
        try:
            new = _reroll(value, segments)
        except RecursionError:
            return op
        if not segments:
            return op
        self.count += 1
        name = f"{op.buffer.name}_run" + (f"{self.count}" if self.count > 1 else "")
        stmts, buffers, slots = _loops(segments, value.dtype, name)
        body: Stmt = seq(*stmts, BufferStore(op.buffer, substitute(new, slots), op.indices))
        for buf in reversed(buffers):
            body = Allocate(buf, body)
        return body


def _count_adds(e: PrimExpr, limit: int) -> int:
    n, stack = 0, [e]
    while stack and n < limit:
        x = stack.pop()
        if isinstance(x, Add):
            n += 1
            stack += [x.a, x.b]
    return n


def _reroll(e: PrimExpr, segments: list[_Segment]) -> PrimExpr:
    """``e`` with its runs replaced by placeholder variables (recorded in ``segments``)."""
    if not isinstance(e, Add):
        return e
    terms = _chain(e)
    terms = [_reroll(t, segments) if isinstance(t, Add) and t.dtype == e.dtype else t
             for t in terms]
    shapes = [_shape(t) for t in terms]
    cur: PrimExpr | None = None
    k = 0
    while k < len(terms):
        end = _run_end(shapes, k)
        if end - k >= MIN_TERMS:
            s0, s1 = shapes[k], shapes[k + 1]
            assert s0 is not None and s1 is not None
            step = [b - a for a, b in zip(s0[1], s1[1])]
            slot = Var(f"run{len(segments)}", e.dtype)
            segments.append(_Segment(s0[0], s0[1], step, end - k, terms[k], cur, slot))
            cur, k = slot, end
            continue
        cur = terms[k] if cur is None else Add(cur, terms[k])
        k += 1
    assert cur is not None
    return cur


def _run_end(shapes: list[tuple[Any, list[int]] | None], k: int) -> int:
    """The end (exclusive) of the longest run from ``k`` of one shape whose constants step
    evenly."""
    first = shapes[k]
    if first is None or k + 1 >= len(shapes) or shapes[k + 1] is None:
        return k + 1
    second = shapes[k + 1]
    assert second is not None
    if second[0] != first[0]:
        return k + 1
    step = [b - a for a, b in zip(first[1], second[1])]
    end = k + 2
    while end < len(shapes):
        s = shapes[end]
        if s is None or s[0] != first[0] or any(
                x != b + (end - k) * d for x, b, d in zip(s[1], first[1], step)):
            break
        end += 1
    return end


def _loops(segments: list[_Segment], dtype: str, name: str
           ) -> tuple[list[Stmt], list[Buffer], dict[Var, PrimExpr]]:
    """The statements computing every segment: runs at the bottom of their chains that
    step evenly from one to the next share one loop nest and one buffer; the others (on
    top of a sum) get a loop each, after the ones their start uses."""
    stmts: list[Stmt] = []
    buffers: list[Buffer] = []
    slots: dict[Var, PrimExpr] = {}
    by_kind: dict[Any, list[_Segment]] = {}
    for seg in segments:
        if seg.init is None:
            by_kind.setdefault((seg.key, tuple(seg.step), seg.count), []).append(seg)
    groups: list[list[_Segment]] = []
    for same in by_kind.values():
        same.sort(key=lambda sg: sg.base)
        for seg in same:
            g = groups[-1] if groups else None
            if g and _continues(g, seg):
                g.append(seg)
            else:
                groups.append([seg])
    zero = const(0, "int32")
    for n, g in enumerate(groups):
        r, j = Var("r", "int32"), Var("t", "int32")
        buf = Buffer(name if n == 0 else f"{name}_{n}", (const(len(g), "int32"),), dtype,
                     "local")
        buffers.append(buf)
        first = g[0]
        stride = [b - a for a, b in zip(first.base, g[1].base)] if len(g) > 1 else [0] * len(
            first.base)
        at: tuple[PrimExpr, ...] = (r,)

        def term(offset: int, first: _Segment = first, stride: list[int] = stride,
                 r: Var = r, j: Var = j) -> PrimExpr:
            coefs = [(b + offset * s, [(rs, r), (s, j)])
                     for b, rs, s in zip(first.base, stride, first.step)]
            return _instantiate(first.term, iter(coefs))

        body = seq(BufferStore(buf, _first_term(first, stride, r), at),
                   For(j, zero, const(first.count - 1, "int32"), ForKind.SERIAL,
                       BufferStore(buf, Add(BufferLoad(buf, at), term(1)), at)))
        stmts.append(For(r, zero, const(len(g), "int32"), ForKind.SERIAL, body))
        for k, seg in enumerate(g):
            slots[seg.slot] = BufferLoad(buf, (const(k, "int32"),))
    for seg in segments:
        if seg.init is None:
            continue
        j = Var("t", "int32")
        buf = Buffer(f"{name}_top{len(buffers)}", (const(1, "int32"),), dtype, "local")
        buffers.append(buf)
        at = (zero,)
        coefs = iter([(b, [(s, j)]) for b, s in zip(seg.base, seg.step)])
        stmts.append(BufferStore(buf, substitute(seg.init, slots), at))
        stmts.append(For(j, zero, const(seg.count, "int32"), ForKind.SERIAL,
                         BufferStore(buf, Add(BufferLoad(buf, at), _instantiate(seg.term,
                                                                                 coefs)), at)))
        slots[seg.slot] = BufferLoad(buf, at)
    return stmts, buffers, slots


def _first_term(seg: _Segment, stride: list[int], r: Var) -> PrimExpr:
    return _instantiate(seg.term, iter([(b, [(rs, r)]) for b, rs in zip(seg.base, stride)]))


def _continues(group: list[_Segment], seg: _Segment) -> bool:
    first = group[0]
    if seg.key != first.key or seg.step != first.step or seg.count != first.count:
        return False
    if len(group) == 1:
        return True
    stride = [b - a for a, b in zip(first.base, group[1].base)]
    n = len(group)
    return all(x == b + n * d for x, b, d in zip(seg.base, first.base, stride))


def _chain(value: Add) -> list[PrimExpr]:
    """The terms of ``((t0 + t1) + t2) + ...``, left to right."""
    terms: list[PrimExpr] = []
    e: PrimExpr = value
    while isinstance(e, Add) and e.dtype == value.dtype:
        terms.append(e.b)
        e = e.a
    terms.append(e)
    return terms[::-1]


def _shape(e: PrimExpr) -> tuple[Any, list[int]] | None:
    """A key equal for terms that differ only in integer constants, and those constants in
    a fixed order; None for a term too deep to compare."""
    consts: list[int] = []
    key = _key(e, consts, 0)
    return None if key is None else (key, consts)


def _key(node: Any, consts: list[int], depth: int) -> Any:
    if depth > _MAX_TERM_DEPTH:
        return None
    if isinstance(node, IntImm):
        if dt.is_int(node.dtype) and not dt.is_bool(node.dtype):
            consts.append(node.value)
            return ("int", node.dtype)
        return ("imm", node.dtype, node.value)
    if isinstance(node, Var):
        return ("var", id(node))
    if isinstance(node, Buffer):
        return ("buffer", id(node.data))
    if isinstance(node, tuple):
        parts = [_key(x, consts, depth + 1) for x in node]
        return None if any(p is None for p in parts) else ("tuple", *parts)
    if dataclasses.is_dataclass(node):
        parts = [type(node).__name__]
        for f in dataclasses.fields(node):
            part = _key(getattr(node, f.name), consts, depth + 1)
            if part is None:
                return None
            parts.append(part)
        return tuple(parts)
    return ("leaf", node) if isinstance(node, (str, int, float, bool, type(None))) else None


def _instantiate(node: Any, consts: Iterator[tuple[int, list[tuple[int, Var]]]]) -> Any:
    """``node`` with its k-th integer constant replaced by ``base + sum(coef * var)`` (the
    constants taken in the order :func:`_key` reads them)."""
    if isinstance(node, IntImm):
        if dt.is_int(node.dtype) and not dt.is_bool(node.dtype):
            base, terms = next(consts)
            out: PrimExpr | None = None
            for coef, var in terms:
                if coef == 0:
                    continue
                v: PrimExpr = var if node.dtype == var.dtype else Cast(node.dtype, var)
                v = v if coef == 1 else Mul(v, IntImm(coef, node.dtype))
                out = v if out is None else Add(out, v)
            if out is None:
                return IntImm(base, node.dtype)
            return Add(out, IntImm(base, node.dtype)) if base != 0 else out
        return node
    if isinstance(node, (Var, Buffer)):
        return node
    if isinstance(node, tuple):
        return tuple(_instantiate(x, consts) for x in node)
    if dataclasses.is_dataclass(node):
        changes = {}
        for f in dataclasses.fields(node):
            old = getattr(node, f.name)
            new = _instantiate(old, consts)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(node, **changes) if changes else node  # type: ignore[type-var]
    return node
