"""Simplifying the bindings a loop primitive rewrites, knowing the loops around them.

A thin scoped wrapper over :class:`mlc.tir.arith.Analyzer`: ``bind`` a loop variable to its
range, ``with simp.loop(var, min, extent):`` while walking into a loop, and call it on an
expression. After ``split(i, [None, 4])`` the binding ``vi = i`` becomes ``i_0 * 4 + i_1``;
after ``fuse(i_0, i_1)`` the Analyzer's div/mod rules turn ``(f // 4) * 4 + f % 4`` back
into ``f``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mlc.tir.arith import Analyzer
from mlc.tir.expr import IntImm, PrimExpr, Range, Var, const
from mlc.tir.functor import collect, substitute


class IndexSimplifier:
    """Simplify integer expressions under the ranges of the loops bound so far."""

    def __init__(self) -> None:
        self.analyzer = Analyzer()

    def bind(self, var: Var, rng: Range) -> None:
        self.analyzer.bind(var, rng)

    @contextmanager
    def loop(self, var: Var, lo: PrimExpr, extent: PrimExpr) -> Iterator[None]:
        """The variable of a loop being entered ranges over ``[lo, lo + extent)``."""
        self.analyzer.bind(var, Range(lo, extent))
        yield

    def __call__(self, e: PrimExpr) -> PrimExpr:
        return self.analyzer.simplify(e)

    def can_prove(self, cond: PrimExpr) -> bool:
        return self.analyzer.can_prove(cond)


def holds_for_sizes(cond: PrimExpr, ana: Analyzer) -> bool:
    """Does ``cond`` hold, provably or else for every size tried? Each symbolic variable of
    ``cond`` takes the same value of 1..17, then mixed values. Used where the analyzer
    cannot prove a condition over symbolic sizes that holds (a split's tail:
    ``(m + 7) // 8 * 8 >= m``) and refuting it by example is what matters."""
    if ana.can_prove(cond):
        return True
    free = sorted(set(collect(cond, lambda n: isinstance(n, Var))), key=lambda v: v.name)
    samples = [dict.fromkeys(free, k) for k in range(1, 18)]
    samples += [{v: (3 * k + 5 * n) % 17 + 1 for n, v in enumerate(free)} for k in range(17)]
    for values in samples:
        got = ana.simplify(substitute(cond, {v: const(x, v.dtype) for v, x in values.items()}))
        if isinstance(got, IntImm) and not got.value:
            return False
    return True
