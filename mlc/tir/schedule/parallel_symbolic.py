"""Separating two accesses of a parallel loop when sizes are symbolic: the part of
:mod:`mlc.tir.schedule.parallel_check` that reads ``B[i * m + j]`` under
``for i in T.parallel(n): for j in range(m)`` (lowered code over ``te.var`` sizes), where
coefficients are expressions and the proofs go through the analyzer.
"""

from __future__ import annotations

import contextlib
import itertools
import math

from mlc.tir import dtype as dt
from mlc.tir.arith.analyzer import Analyzer
from mlc.tir.arith.evaluate import evaluate_known
from mlc.tir.expr import (
    LE,
    LT,
    Add,
    Cast,
    IntImm,
    Mul,
    PrimExpr,
    Range,
    Sub,
    Var,
    conjuncts,
)
from mlc.tir.functor import IRMutator, substitute, uses_var


def symbolic_separates(w: PrimExpr, r: PrimExpr, v: Var, ranges: dict[Var, Range],
                        indices: list[PrimExpr]) -> bool:
    """``parallel_check._dimension_separates`` with coefficients and loop extents that
    are expressions of sizes: each index read as ``sum(coef * loop) + rest`` (integer widening
    casts dropped), the same coefficients in both, and a term shown zero when its
    coefficient exceeds what the others can add, proved by the analyzer. A loop that
    encloses an access runs at least once when the access does, so its extent is >= 1."""
    loops = set(ranges)
    fw, fr = _sym_form(_strip_casts(w), loops), _sym_form(_strip_casts(r), loops)
    if fw is None or fr is None:
        return False
    (cw, rest_w), (cr, rest_r) = fw, fr
    ana = Analyzer()
    for var, rng in ranges.items():
        ext = rng.extent
        if isinstance(ext, Var) and any(uses_var(e, lambda y, var=var: y is var)  # type: ignore[misc]
                                        for e in indices):
            ana.bind(ext, Range(IntImm(1, ext.dtype), IntImm(2**31 - 2, ext.dtype)))
    delta = ana.simplify(rest_w - rest_r)
    if not isinstance(delta, IntImm):
        return False
    if v not in cw or v not in cr or not ana.can_prove_equal(cw[v], cr[v]):
        return False
    terms: list[tuple[PrimExpr, PrimExpr, bool]] = []  # (|coef|, reach, target)
    for var in {**cw, **cr}:
        reach = ana.simplify(ranges[var].extent - 1)
        both = var in cw and var in cr and ana.can_prove_equal(cw[var], cr[var])
        if not both and not ana.can_prove_equal(ranges[var].min, 0):
            return False  # a loop from elsewhere than 0 on one side only: not read here
        for c in ([cw[var]] if both else [x[var] for x in (cw, cr) if var in x]):
            size = _magnitude(ana.simplify(c), ana)
            if size is None:
                return False
            terms.append((size, reach, var is v))
    live = list(terms)
    changed = True
    while changed:
        changed = False
        for n, (size, _, target) in enumerate(live):
            rest: PrimExpr = IntImm(abs(delta.value), size.dtype)
            for m, (s2, r2, _) in enumerate(live):
                if m != n:
                    rest = rest + s2 * r2
            if ana.can_prove(size > rest):
                if target:
                    return True
                live.pop(n)
                changed = True
                break
    return False


def within_rows(w: PrimExpr, r: PrimExpr, v: Var, ranges: dict[Var, Range],
                 guards_w: list[PrimExpr], guards_r: list[PrimExpr]) -> bool:
    """Both indices ``c * v + R`` with the same ``c > 0`` and each ``R`` provably within
    ``[0, c - 1]``, directly or through a guard around the access (``j_0 * 4 + 3 < m``
    around a vector store of row ``v`` of length ``m``): then two iterations of ``v`` meet
    in no element. The guard is what keeps a split's last, partial tile in its row."""
    loops = set(ranges)
    fw, fr = _sym_form(_strip_casts(w), loops), _sym_form(_strip_casts(r), loops)
    if fw is None or fr is None or v not in fw[0] or v not in fr[0]:
        return False
    ana = Analyzer()
    exprs = [w, r, *guards_w, *guards_r]
    for var, rng in ranges.items():
        ext = rng.extent
        if isinstance(ext, Var) and any(uses_var(e, lambda y, var=var: y is var)  # type: ignore[misc]
                                        for e in exprs):
            ana.bind(ext, Range(IntImm(1, ext.dtype), IntImm(2**31 - 2, ext.dtype)))
    for var, rng in ranges.items():
        ana.bind(var, Range(_strip_casts(rng.min), _strip_casts(rng.extent)))
    # 0 <= row < c for both accesses (below) also makes c >= 1 whenever they run
    c = ana.simplify(fw[0][v])
    if not ana.can_prove_equal(c, fr[0][v]):
        return False
    for (coef, rest), guards in ((fw, guards_w), (fr, guards_r)):
        row: PrimExpr = rest
        for var, k in coef.items():
            if var is not v:
                row = row + k * var
        conds = [g for guard in guards for g in conjuncts(_strip_casts(guard))]
        with contextlib.ExitStack() as stack:
            for g in conds:  # what the guards say of single variables (j_0 * 4 + 3 < n: n >= 4)
                stack.enter_context(ana.constraint_scope(g))
            row = ana.simplify(row)
            small = _small_loops(ranges)
            if not _prove_each(row >= 0, small, ana):
                return False
            if not (_prove_each(row < c, small, ana)
                    or any(_guard_keeps(row, c, g, small, ana) for g in conds)):
                return False
    return True


def _small_loops(ranges: dict[Var, Range]) -> dict[Var, range]:
    """Loops of a few constant iterations (a tile's rows, a vector's lanes): proofs try
    each of their values, where bounds of ``n - i_1 * n`` taken apart would fail."""
    out: dict[Var, range] = {}
    for var, rng in ranges.items():
        lo, n = evaluate_known(rng.min, {}), evaluate_known(rng.extent, {})
        if isinstance(lo, int) and isinstance(n, int) and 0 < n <= 16:
            out[var] = range(lo, lo + n)
    return out


def _prove_each(cond: PrimExpr, small: dict[Var, range], ana: Analyzer) -> bool:
    """``cond`` for every value of the small loops it uses (at most 256 cases)."""
    used = [(v, r) for v, r in small.items() if uses_var(cond, lambda y, v=v: y is v)]  # type: ignore[misc]
    if not used or math.prod(len(r) for _, r in used) > 256:
        return ana.can_prove(cond)
    for values in itertools.product(*(r for _, r in used)):
        case = substitute(cond, {v: IntImm(x, v.dtype) for (v, _), x in zip(used, values)})
        if not ana.can_prove(case):
            return False
    return True


def _guard_keeps(row: PrimExpr, c: PrimExpr, guard: PrimExpr, small: dict[Var, range],
                 ana: Analyzer) -> bool:
    """Does ``guard`` (``L < U`` or ``L <= U``) show ``row < c``: ``row = L + (row - L)
    < U + (row - L) <= c``?"""
    if not isinstance(guard, (LT, LE)):
        return False
    # row = L + (row - L) < U + (row - L), or <= for LE
    beyond = ana.simplify(guard.b + (row - guard.a))
    return _prove_each(beyond <= c if isinstance(guard, LT) else beyond < c, small, ana)


def _magnitude(c: PrimExpr, ana: Analyzer) -> PrimExpr | None:
    if ana.can_prove(c > 0):
        return c
    if ana.can_prove(c < 0):
        return ana.simplify(-c)
    return None


def _strip_casts(e: PrimExpr) -> PrimExpr:
    class Strip(IRMutator):
        def visit_Cast(self, op: Cast) -> PrimExpr:
            inner = self.visit(op.value)
            if dt.is_int(op.dtype) and dt.is_int(inner.dtype) and dt.bits(op.dtype) >= dt.bits(
                    inner.dtype):
                return inner  # type: ignore[no-any-return]
            return Cast(op.dtype, inner)

        def visit_IntImm(self, op: IntImm) -> PrimExpr:
            # int64(4) beside the int32 loops it was widened with: back to int32
            if dt.is_int(op.dtype) and -(2**31) <= op.value < 2**31:
                return IntImm(op.value, "int32")
            return op

    return Strip().visit(e)  # type: ignore[no-any-return]


def _sym_form(e: PrimExpr, loops: set[Var]) -> tuple[dict[Var, PrimExpr], PrimExpr] | None:
    """``e`` as ``sum(coef[x] * x for x in loops) + rest``, coefficients and rest free of
    the loops; None when it is not of that form."""
    if not uses_var(e, lambda y: y in loops):
        return {}, e
    if isinstance(e, Var):
        return {e: IntImm(1, e.dtype)}, IntImm(0, e.dtype)
    if isinstance(e, (Add, Sub)):
        a, b = _sym_form(e.a, loops), _sym_form(e.b, loops)
        if a is None or b is None:
            return None
        coef = dict(a[0])
        for x, c in b[0].items():
            c2 = c if isinstance(e, Add) else -c
            coef[x] = coef[x] + c2 if x in coef else c2
        return coef, (a[1] + b[1] if isinstance(e, Add) else a[1] - b[1])
    if isinstance(e, Mul):
        for lhs, rhs in ((e.a, e.b), (e.b, e.a)):
            if not uses_var(rhs, lambda y: y in loops):
                f = _sym_form(lhs, loops)
                if f is None:
                    return None
                return {x: c * rhs for x, c in f[0].items()}, f[1] * rhs
    return None
