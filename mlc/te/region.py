"""The read and write regions of a block made by ``create_prim_func``.

A block's regions are written in terms of its own iteration variables, which are free in the
block, so one access ``A[vi, vk]`` is exactly the point region ``A[vi, vk]``. Several accesses
to the same buffer are merged per dimension: indices that differ by a constant (``vi`` and
``vi + 1``) give ``vi : vi + 2``; anything else widens to the whole dimension ``0 : n``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mlc.tir.arith import simplify
from mlc.tir.expr import Add, BufferLoad, IntImm, PrimExpr, Range, Sub, Var, const
from mlc.tir.functor import post_order_visit
from mlc.tir.stmt import Buffer, BufferRegion


def same_expr(a: Any, b: Any) -> bool:
    """Structural equality of two expressions (variables and buffers by identity)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (Var, Buffer)):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same_expr(x, y) for x, y in zip(a, b))
    if dataclasses.is_dataclass(a):
        return all(
            same_expr(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    return bool(a == b)


def _split_offset(e: PrimExpr) -> tuple[PrimExpr | None, int]:
    """``base + c`` -> (base, c); a constant -> (None, c)."""
    if isinstance(e, IntImm):
        return None, e.value
    if isinstance(e, Add) and isinstance(e.b, IntImm):
        base, off = _split_offset(e.a)
        return base, off + e.b.value
    if isinstance(e, Sub) and isinstance(e.b, IntImm):
        base, off = _split_offset(e.a)
        return base, off - e.b.value
    return e, 0


def _offsets(idx: list[PrimExpr]) -> list[int] | None:
    """Each index minus the first, when all those differences are constants."""
    out = [0]
    for i in idx[1:]:
        if same_expr(i, idx[0]):
            out.append(0)
            continue
        base_a, off_a = _split_offset(idx[0])
        base_b, off_b = _split_offset(i)
        if same_expr(base_a, base_b):
            out.append(off_b - off_a)
            continue
        diff = simplify(i - idx[0])
        if not isinstance(diff, IntImm):
            return None
        out.append(diff.value)
    return out


def _has_load(e: PrimExpr) -> bool:
    found = False

    def visit(n: Any) -> None:
        nonlocal found
        if isinstance(n, BufferLoad):
            found = True

    post_order_visit(e, visit)
    return found


def merge_accesses(buffer: Buffer, accesses: list[tuple[PrimExpr, ...]]) -> BufferRegion:
    """One region covering all ``accesses`` (index tuples) of ``buffer``."""
    region = []
    for d, extent in enumerate(buffer.shape):
        idx = [acc[d] for acc in accesses]
        full = Range(const(0, extent.dtype), extent)
        if any(_has_load(i) for i in idx):
            region.append(full)
            continue
        offsets = _offsets(idx)
        if offsets is None:
            region.append(full)
        else:
            lo, hi = min(offsets), max(offsets)
            start = simplify(idx[0] + lo) if lo else idx[0]
            region.append(Range(start, const(hi - lo + 1, idx[0].dtype)))
    return BufferRegion(buffer, tuple(region))


def collect_regions(node: Any, skip: Buffer | None = None) -> list[BufferRegion]:
    """The buffers loaded under ``node`` (except ``skip``), one merged region each, in order
    of first appearance."""
    order: list[Buffer] = []
    accesses: dict[int, list[tuple[PrimExpr, ...]]] = {}

    def visit(n: Any) -> None:
        if isinstance(n, BufferLoad) and n.buffer is not skip:
            if id(n.buffer) not in accesses:
                order.append(n.buffer)
                accesses[id(n.buffer)] = []
            accesses[id(n.buffer)].append(n.indices)

    for n in node if isinstance(node, (tuple, list)) else (node,):
        post_order_visit(n, visit)
    return [merge_accesses(b, accesses[id(b)]) for b in order]
