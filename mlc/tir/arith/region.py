"""Regions: which part of a buffer a set of accesses touches.

``eval_region(indices, dom)`` answers, per dimension, "when the variables in ``dom`` take
every value of their ranges, which ``[min, min + extent)`` do these indices cover?"::

    dom = {i1: Range(0, 32), k: Range(0, 1024)}
    eval_region([i0 * 32 + i1, k], dom)   # -> [Range(i0 * 32, 32), Range(0, 1024)]

Affine indices give the exact answer (each variable of ``dom`` appearing once after
simplification); anything else (``x // c``, ``min``, ``max``) a safe over-approximation by
symbolic interval arithmetic; when even that fails, the buffer's whole extent (``shape``).
"""

from __future__ import annotations

from collections.abc import Sequence

from mlc.errors import LoweringError
from mlc.tir import dtype as dt
from mlc.tir.arith.analyzer import Analyzer
from mlc.tir.arith.linear import to_linear
from mlc.tir.expr import (
    Add,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Range,
    Sub,
    Var,
)

SymBound = tuple[PrimExpr, PrimExpr]  # inclusive [lo, hi], expressions


def eval_region(
    indices: Sequence[PrimExpr],
    dom: dict[Var, Range],
    shape: Sequence[PrimExpr] | None = None,
    analyzer: Analyzer | None = None,
) -> list[Range]:
    """One simplified Range per index covering all its values as ``dom``'s variables vary.

    ``analyzer`` may carry bounds of variables outside ``dom`` (they stay symbolic in the
    result but help prove things); ``shape`` is the fallback for indices it cannot bound."""
    ana = analyzer or Analyzer()
    bounds_ana = Analyzer()
    bounds_ana._ranges.update(ana._ranges)
    bounds_ana._values.update(ana._values)
    for v, r in dom.items():
        bounds_ana.bind(v, r)
    out: list[Range] = []
    for n, index in enumerate(indices):
        idx = ana.simplify(index)
        sym = _sym_bound(idx, dom, ana, bounds_ana)
        if sym is None:
            out.append(_fallback(idx, n, shape, bounds_ana))
            continue
        lo, hi = sym
        lo_s = ana.simplify(lo)
        out.append(Range(lo_s, ana.simplify(hi - lo_s + 1)))
    return out


def _fallback(idx: PrimExpr, n: int, shape: Sequence[PrimExpr] | None, ana: Analyzer) -> Range:
    if shape is not None:
        return Range(IntImm(0, idx.dtype), shape[n])
    lo, hi = ana.const_int_bound(idx)
    if isinstance(lo, int) and isinstance(hi, int):
        return Range(IntImm(lo, idx.dtype), IntImm(hi - lo + 1, idx.dtype))
    raise LoweringError(
        f"cannot bound the index `{idx}` (dimension {n}) over the loops it runs in; "
        "give the buffer's shape to eval_region or use an affine index"
    )


def _sym_bound(
    e: PrimExpr, dom: dict[Var, Range], ana: Analyzer, bounds_ana: Analyzer
) -> SymBound | None:
    """Inclusive symbolic bounds of ``e`` as the variables of ``dom`` vary; None if unknown."""
    if not dt.is_int(e.dtype) or dt.lanes(e.dtype) != 1:
        return None
    if isinstance(e, IntImm):
        return (e, e)
    if isinstance(e, Var):
        r = dom.get(e)
        if r is None:
            return (e, e)
        return (r.min, r.min + r.extent - 1)
    if isinstance(e, (Add, Sub, Mul)) and _is_affine_in(e, dom):
        return _affine_bound(e, dom)
    if isinstance(e, Add):
        a, b = _sym_bound(e.a, dom, ana, bounds_ana), _sym_bound(e.b, dom, ana, bounds_ana)
        if a is None or b is None:
            return None
        return (a[0] + b[0], a[1] + b[1])
    if isinstance(e, Sub):
        a, b = _sym_bound(e.a, dom, ana, bounds_ana), _sym_bound(e.b, dom, ana, bounds_ana)
        if a is None or b is None:
            return None
        return (a[0] - b[1], a[1] - b[0])
    if isinstance(e, Mul) and isinstance(e.b, IntImm):
        a = _sym_bound(e.a, dom, ana, bounds_ana)
        if a is None:
            return None
        c = e.b
        return (a[0] * c, a[1] * c) if c.value >= 0 else (a[1] * c, a[0] * c)
    if isinstance(e, FloorDiv) and isinstance(e.b, IntImm) and e.b.value > 0:
        a = _sym_bound(e.a, dom, ana, bounds_ana)
        if a is None:
            return None
        return (a[0] // e.b, a[1] // e.b)
    if isinstance(e, FloorMod) and isinstance(e.b, IntImm) and e.b.value > 0:
        a = _sym_bound(e.a, dom, ana, bounds_ana)
        m = e.b.value
        if a is not None:
            # within one period of m the remainder is monotone: [lo % m, hi % m]
            same = ana.simplify(a[0] // m - a[1] // m)
            if isinstance(same, IntImm) and same.value == 0:
                return (a[0] % m, a[1] % m)
        return (IntImm(0, e.dtype), IntImm(m - 1, e.dtype))
    if isinstance(e, (Min, Max)):
        a, b = _sym_bound(e.a, dom, ana, bounds_ana), _sym_bound(e.b, dom, ana, bounds_ana)
        if a is None or b is None:
            return None
        f = Min if isinstance(e, Min) else Max
        return (f(a[0], b[0]), f(a[1], b[1]))
    if not _mentions(e, dom):
        return (e, e)
    lo, hi = bounds_ana.const_int_bound(e)
    if isinstance(lo, int) and isinstance(hi, int):
        return (IntImm(lo, e.dtype), IntImm(hi, e.dtype))
    return None


def _mentions(e: PrimExpr, dom: dict[Var, Range]) -> bool:
    from mlc.tir.functor import uses_var

    ids = {id(v) for v in dom}
    return uses_var(e, lambda v: id(v) in ids)


def _is_affine_in(e: PrimExpr, dom: dict[Var, Range]) -> bool:
    """Every atom that mentions a variable of ``dom`` is that variable itself."""
    lin = to_linear(e)
    for atom, _ in lin.terms.values():
        if isinstance(atom, Var):
            continue
        if _mentions(atom, dom):
            return False
    return True


def _affine_bound(e: PrimExpr, dom: dict[Var, Range]) -> SymBound:
    lin = to_linear(e)
    lo: PrimExpr = IntImm(lin.const, e.dtype)
    hi: PrimExpr = IntImm(lin.const, e.dtype)
    for atom, coef in lin.terms.values():
        r = dom.get(atom) if isinstance(atom, Var) else None
        if r is None:
            lo, hi = lo + atom * coef, hi + atom * coef
            continue
        first, last = r.min, r.min + r.extent - 1
        if coef > 0:
            lo, hi = lo + first * coef, hi + last * coef
        else:
            lo, hi = lo + last * coef, hi + first * coef
    return (lo, hi)
