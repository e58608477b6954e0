"""A scoped view of the arithmetic analyzer for the lowering passes.

Passes walk loop nests; inside ``for i in range(m, m + e)`` the simplifier may assume
``m <= i < m + e``. :class:`Scope` keeps those facts for the loops enclosing the current
point and hands them to :class:`mlc.tir.arith.Analyzer`.
"""

from __future__ import annotations

from mlc.tir.arith import Analyzer
from mlc.tir.expr import (
    FloatImm,
    IntImm,
    Not,
    PrimExpr,
    Range,
    Var,
)


class Scope:
    """The ranges of the loop variables around the current statement, and an analyzer that
    knows them. ``bind`` returns a token for ``unbind`` so bindings nest like loops."""

    def __init__(self) -> None:
        self.ranges: dict[Var, Range] = {}
        self._analyzer: Analyzer | None = None
        self._bound: dict[Var, Range] = {}

    # -- scoping ---------------------------------------------------------------------------
    def bind(self, var: Var, rng: Range) -> Range | None:
        old = self.ranges.get(var)
        self.ranges[var] = rng
        return old

    def unbind(self, var: Var, old: Range | None) -> None:
        if old is None:
            self.ranges.pop(var, None)
        else:
            self.ranges[var] = old

    def _get(self) -> Analyzer:
        # Rebuild the analyzer when a variable it knows changed range; add new ones.
        if self._analyzer is None or any(
            self.ranges.get(v) is not r for v, r in self._bound.items() if v in self.ranges
        ):
            self._analyzer = Analyzer()
            self._bound = {}
        for v, r in self.ranges.items():
            if v not in self._bound:
                self._analyzer.bind(v, r)
                self._bound[v] = r
        return self._analyzer

    # -- queries ---------------------------------------------------------------------------
    def simplify(self, e: PrimExpr) -> PrimExpr:
        return self._get().simplify(e)

    def can_prove(self, cond: PrimExpr) -> bool:
        c = self.simplify(cond)
        if isinstance(c, IntImm):
            return bool(c.value)
        return bool(self._get().can_prove(c))

    def can_disprove(self, cond: PrimExpr) -> bool:
        return self.can_prove(Not(cond))


def is_const_true(e: object) -> bool:
    """True for the constant ``True`` (an IntImm of value 1/bool) or a Python True."""
    if e is True:
        return True
    return isinstance(e, IntImm) and e.value != 0


def is_const(e: PrimExpr) -> bool:
    return isinstance(e, (IntImm, FloatImm))
