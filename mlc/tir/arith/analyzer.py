"""The Analyzer: what is known about variables, and the questions schedule primitives ask.

    ana = Analyzer()
    ana.bind(i, Range(0, 32)); ana.bind(j, Range(0, 32))
    ana.simplify((i * 32 + j) // 32)        # -> i
    ana.can_prove(i * 32 + j < 1024)        # -> True
    ana.const_int_bound(i * 32 + j)         # -> (0, 1023)

A variable is bound either to a ``Range`` (it takes every value in it) or to an expression
(it *is* that expression; ``simplify`` substitutes it).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mlc.errors import MLCTypeError
from mlc.tir import dtype as dt
from mlc.tir.arith.bound import UNKNOWN, Bound, BoundEvaluator, intersect
from mlc.tir.arith.rewrite import Rewriter
from mlc.tir.expr import (
    GE,
    GT,
    LE,
    LT,
    CmpOp,
    IntImm,
    PrimExpr,
    Range,
    SizeVar,
    Var,
    conjuncts,
    convert,
)


class Analyzer:
    """Bounds of variables plus the simplifier that uses them."""

    def __init__(self) -> None:
        self._ranges: dict[int, tuple[Var, Range]] = {}
        self._values: dict[int, tuple[Var, PrimExpr]] = {}
        self._constraints: list[dict[int, Bound]] = []
        self._busy: set[int] = set()  # guards against a range that mentions its own variable
        self._bounds = BoundEvaluator(self._var_bound)
        self._rewriter = Rewriter(self)

    # -- what is known ------------------------------------------------------------------------
    def bind(self, var: Var, value: Range | PrimExpr | int, allow_override: bool = True) -> None:
        """Tell the analyzer ``var`` ranges over ``value`` (a Range) or equals it (an expr)."""
        if not isinstance(var, Var):
            raise MLCTypeError(f"Analyzer.bind expects a Var, got {type(var).__name__}: {var!r}")
        if not allow_override and (id(var) in self._ranges or id(var) in self._values):
            raise MLCTypeError(f"variable {var.name} is already bound in this Analyzer")
        self._ranges.pop(id(var), None)
        self._values.pop(id(var), None)
        if isinstance(value, Range):
            self._ranges[id(var)] = (var, value)
        else:
            self._values[id(var)] = (var, convert(value, var.dtype))

    def bind_all(self, dom: dict[Var, Range]) -> None:
        for v, r in dom.items():
            self.bind(v, r)

    def bound_value(self, var: Var) -> PrimExpr | None:
        """The expression ``var`` was bound to, if any."""
        found = self._values.get(id(var))
        return found[1] if found is not None else None

    def range_of(self, var: Var) -> Range | None:
        found = self._ranges.get(id(var))
        return found[1] if found is not None else None

    @contextmanager
    def constraint_scope(self, cond: PrimExpr) -> Iterator[None]:
        """Inside the ``with``, assume ``cond`` holds. Conditions of the form ``var < e``,
        ``var >= e`` (and ``and`` of them) with ``e`` bounded tighten ``var``'s bound."""
        tight: dict[int, Bound] = {}
        for part in conjuncts(self.simplify(cond)):
            self._learn(part, tight)
        self._constraints.append(tight)
        try:
            yield
        finally:
            self._constraints.pop()

    @contextmanager
    def let_scope(self, var: Var, value: PrimExpr) -> Iterator[None]:
        """Inside the ``with``, ``var`` has the bound of ``value`` (it is not substituted)."""
        self._constraints.append({id(var): self.const_int_bound(value)})
        try:
            yield
        finally:
            self._constraints.pop()

    def _learn(self, cond: PrimExpr, tight: dict[int, Bound]) -> None:
        if not isinstance(cond, (LT, LE, GT, GE)):
            return
        a, b = cond.a, cond.b
        flip = {LT: GT, LE: GE, GT: LT, GE: LE}
        kind: type[CmpOp] = type(cond)
        if not isinstance(a, Var) and isinstance(b, Var):
            a, b, kind = b, a, flip[kind]
        if not isinstance(a, Var) or not dt.is_int(a.dtype):
            return
        lo, hi = self.const_int_bound(b)
        new: Bound = {LT: (-math.inf, hi - 1), LE: (-math.inf, hi), GT: (lo + 1, math.inf),
                      GE: (lo, math.inf)}[kind]
        tight[id(a)] = intersect(tight.get(id(a), UNKNOWN), new)

    def _var_bound(self, v: Var) -> Bound:
        key = id(v)
        if key in self._busy:
            return UNKNOWN
        self._busy.add(key)
        try:
            b = self._base_var_bound(v)
        finally:
            self._busy.discard(key)
        for tight in self._constraints:
            if key in tight:
                b = intersect(b, tight[key])
        return b

    def _base_var_bound(self, v: Var) -> Bound:
        if id(v) in self._values:
            return self._bounds(self._values[id(v)][1])
        if id(v) in self._ranges:
            r = self._ranges[id(v)][1]
            lo = self._bounds(r.min)
            ext = self._bounds(r.extent)
            return (lo[0], lo[1] + ext[1] - 1)
        if isinstance(v, SizeVar) or dt.is_uint(v.dtype):
            return (0, math.inf)
        return UNKNOWN

    # -- questions --------------------------------------------------------------------------
    def simplify(self, expr: PrimExpr | int) -> PrimExpr:
        """An equivalent, simpler expression (see :mod:`mlc.tir.arith.rewrite` for the rules).
        Running it twice gives the same result as running it once."""
        e = convert(expr)
        out = self._rewriter(e)
        again = self._rewriter(out)  # a second pass catches rules enabled by the first
        return again

    def const_int_bound(self, expr: PrimExpr | int) -> tuple[Any, Any]:
        """``(lo, hi)``: every value of the integer ``expr`` lies in ``[lo, hi]``. Ends are
        ints, or ``-math.inf``/``math.inf`` when unknown."""
        lo, hi = self._bounds(convert(expr))
        return (_as_int(lo), _as_int(hi))

    def can_prove(self, cond: PrimExpr | bool) -> bool:
        """True only when ``cond`` holds for every value of the bound variables."""
        if isinstance(cond, bool):
            return cond
        e = self.simplify(cond)
        return isinstance(e, IntImm) and e.value != 0

    def can_prove_equal(self, a: PrimExpr | int, b: PrimExpr | int) -> bool:
        x, y = convert(a), convert(b)
        if dt.is_float(x.dtype) or dt.is_float(y.dtype):
            from mlc.tir.arith.linear import expr_key

            return expr_key(self.simplify(x)) == expr_key(self.simplify(y))
        return self.can_prove(x == y)

    def can_prove_less(self, a: PrimExpr | int, b: PrimExpr | int) -> bool:
        return self.can_prove(convert(a) < convert(b))


def _as_int(x: float) -> Any:
    return x if math.isinf(x) else int(x)


def simplify(expr: PrimExpr | int, bounds: dict[Var, Range] | None = None) -> PrimExpr:
    """Simplify ``expr``, knowing each variable in ``bounds`` ranges over its Range."""
    ana = Analyzer()
    for v, r in (bounds or {}).items():
        ana.bind(v, r)
    return ana.simplify(expr)
