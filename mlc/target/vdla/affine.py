"""Small helpers the VDLA passes share: scopes, loop chains and affine index forms."""

from __future__ import annotations

from dataclasses import dataclass

from mlc.errors import LoweringError
from mlc.tir.arith import simplify
from mlc.tir.arith.linear import Linear, from_linear, to_linear
from mlc.tir.expr import BufferLoad, Call, IntImm, PrimExpr, StringImm, Var, const
from mlc.tir.functor import uses_var
from mlc.tir.stmt import Buffer, For, Stmt
from mlc.vdla.config import MemScope

SCOPES = {s.value: s for s in MemScope}

#: The loop annotation that marks the loops of a GEMM's micro-op kernel.
UOP_LOOP = "vdla.uop_loop"


def scope_of(buf: Buffer) -> MemScope | None:
    """The on-chip buffer ``buf`` lives in, or None for DRAM."""
    return SCOPES.get(buf.scope)


def access_ptr(buf: Buffer, indices: tuple[PrimExpr, ...], mask: str) -> PrimExpr:
    """``access_ptr(buf[indices], mask)``: the address of an element, as tensorize writes it."""
    return Call("handle", "access_ptr", (BufferLoad(buf, indices), StringImm(mask)))


def ptr_target(e: PrimExpr) -> BufferLoad | None:
    """The element an ``access_ptr`` call points at."""
    if isinstance(e, Call) and e.op == "access_ptr" and isinstance(e.args[0], BufferLoad):
        return e.args[0]
    return None


def as_int(e: PrimExpr) -> int:
    e = simplify(e)
    if not isinstance(e, IntImm):
        raise LoweringError(f"the vdla target needs constant sizes, got `{e}`")
    return e.value


def perfect_chain(stmt: Stmt) -> tuple[list[For], Stmt]:
    """The loops ``stmt`` starts with, each the only statement of the one above, and the
    statement inside them."""
    loops: list[For] = []
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt


@dataclass
class Affine:
    """``outer + sum(coef[v] * v)`` where the ``v`` are the loops being analysed."""

    outer: PrimExpr
    coef: dict[Var, int]


def affine(e: PrimExpr, loops: list[For]) -> Affine | None:
    """``e`` as an affine form in the loop variables of ``loops`` (None if it is not)."""
    lin = to_linear(simplify(e))
    mine = {id(f.loop_var): f.loop_var for f in loops}
    outer = Linear(lin.dtype, const=lin.const)
    coef: dict[Var, int] = {}
    for key, (atom, c) in lin.terms.items():
        if isinstance(atom, Var) and id(atom) in mine:
            coef[mine[id(atom)]] = coef.get(mine[id(atom)], 0) + c
        elif uses_var(atom, lambda v: id(v) in mine):
            return None
        else:
            outer.add_term(atom, c, key)
    return Affine(simplify(from_linear(outer)) if outer.terms else const(outer.const), coef)


def rectangle(dims: list[Affine], loops: list[For]) -> list[int] | None:
    """The extents of the dense box ``dims`` covers when ``loops`` run, or None when the
    loops do not enumerate a box once each (every loop in one dimension, mixed radix)."""
    extents = {id(f.loop_var): as_int(f.extent) for f in loops}
    used: set[int] = set()
    out = []
    for d in dims:
        terms = sorted((c, extents[id(v)]) for v, c in d.coef.items() if c != 0)
        size = 1
        for c, e in terms:
            if c != size:
                return None
            size *= e
        used |= {id(v) for v, c in d.coef.items() if c != 0}
        out.append(size)
    if any(extents[id(f.loop_var)] != 1 and id(f.loop_var) not in used for f in loops):
        return None
    return out
