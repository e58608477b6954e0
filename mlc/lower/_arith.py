"""A scoped view of the arithmetic analyzer for the lowering passes.

Passes walk loop nests; inside ``for i in range(m, m + e)`` the simplifier may assume
``m <= i < m + e``. :class:`Scope` keeps those facts for the loops enclosing the current
point and hands them to :class:`mlc.tir.arith.Analyzer`. If the arith module is missing (it
is written alongside this package), only constant folding happens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlc.tir import dtype as dt
from mlc.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    Not,
    Or,
    PrimExpr,
    Range,
    Sub,
    Var,
    const,
)

_Analyzer: Any
try:  # the simplifier lives in mlc.tir.arith
    from mlc.tir.arith import Analyzer as _Analyzer
except ImportError:  # pragma: no cover - only while mlc.tir.arith is being written
    _Analyzer = None


class Scope:
    """The ranges of the loop variables around the current statement, and an analyzer that
    knows them. ``bind`` returns a token for ``unbind`` so bindings nest like loops."""

    def __init__(self) -> None:
        self.ranges: dict[Var, Range] = {}
        self._analyzer: Any = None
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

    def _get(self) -> Any:
        if _Analyzer is None:
            return None
        # Rebuild the analyzer when a variable it knows changed range; add new ones.
        if self._analyzer is None or any(
            self.ranges.get(v) is not r for v, r in self._bound.items() if v in self.ranges
        ):
            self._analyzer = _Analyzer()
            self._bound = {}
        for v, r in self.ranges.items():
            if v not in self._bound:
                self._analyzer.bind(v, r)
                self._bound[v] = r
        return self._analyzer

    # -- queries ---------------------------------------------------------------------------
    def simplify(self, e: PrimExpr) -> PrimExpr:
        ana = self._get()
        if ana is None:
            return fold_constants(e)
        return ana.simplify(e)  # type: ignore[no-any-return]

    def can_prove(self, cond: PrimExpr) -> bool:
        c = self.simplify(cond)
        if isinstance(c, IntImm):
            return bool(c.value)
        ana = self._get()
        return bool(ana is not None and ana.can_prove(c))

    def can_disprove(self, cond: PrimExpr) -> bool:
        return self.can_prove(Not(cond))


_FOLD: dict[type, Callable[[int, int], Any]] = {
    Add: lambda a, b: a + b,
    Sub: lambda a, b: a - b,
    Mul: lambda a, b: a * b,
    Min: min,
    Max: max,
    FloorDiv: lambda a, b: a // b if b else None,
    FloorMod: lambda a, b: a % b if b else None,
    LT: lambda a, b: a < b,
    LE: lambda a, b: a <= b,
    GT: lambda a, b: a > b,
    GE: lambda a, b: a >= b,
    EQ: lambda a, b: a == b,
    NE: lambda a, b: a != b,
    And: lambda a, b: bool(a) and bool(b),
    Or: lambda a, b: bool(a) or bool(b),
}


def fold_constants(e: PrimExpr) -> PrimExpr:
    """Fold integer operations whose operands are constants (the fallback simplifier)."""
    if isinstance(e, BinaryOp) and dt.lanes(e.dtype) == 1:
        a, b = fold_constants(e.a), fold_constants(e.b)
        fn = _FOLD.get(type(e))
        if fn is not None and isinstance(a, IntImm) and isinstance(b, IntImm):
            value = fn(a.value, b.value)
            if value is not None:
                return const(int(value), e.dtype)
        if isinstance(e, (Add, Sub)) and isinstance(b, IntImm) and b.value == 0:
            return a
        if isinstance(e, Add) and isinstance(a, IntImm) and a.value == 0:
            return b
        if isinstance(e, Mul) and isinstance(b, IntImm) and b.value == 1:
            return a
        if isinstance(e, Mul) and isinstance(a, IntImm) and a.value == 1:
            return b
        if a is e.a and b is e.b:
            return e
        return type(e)(a, b, e.dtype)
    if isinstance(e, Not):
        a = fold_constants(e.a)
        if isinstance(a, IntImm):
            return const(not a.value, e.dtype)
        return e if a is e.a else Not(a, e.dtype)
    return e


def is_const_true(e: object) -> bool:
    """True for the constant ``True`` (an IntImm of value 1/bool) or a Python True."""
    if e is True:
        return True
    return isinstance(e, IntImm) and e.value != 0


def is_const(e: PrimExpr) -> bool:
    return isinstance(e, (IntImm, FloatImm))
