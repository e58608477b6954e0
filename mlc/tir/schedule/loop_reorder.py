"""Schedule primitive ``reorder``: permute the loops of one perfectly nested chain.

A loop bound to an ordered (scan) variable may not move inside another loop.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mlc.tir.expr import (
    IterKind,
)
from mlc.tir.functor import uses_var
from mlc.tir.schedule import state
from mlc.tir.schedule.base import ScheduleBase
from mlc.tir.schedule.loop_helpers import _describe, _loop_list, _mentions_var
from mlc.tir.schedule.trace import LoopRV
from mlc.tir.stmt import BlockRealize, For, Stmt


class ReorderPrimitives(ScheduleBase):
    """``reorder``."""

    # ----------------------------------------------------------------------------------------
    # reorder

    def reorder(self, *ordered_loops: LoopRV, **kwargs: Any) -> None:
        """Put the given loops in the given order (outermost first). They must lie in one
        perfectly nested chain; loops of the chain that are not named stay where they are.
        Before::

            for i in range(4):
                for j in range(8):
                    for k in range(16):
                        with block("C"): ...

        ``sch.reorder(k, i)``, after (``j`` was not named and stays in the middle)::

            for k in range(16):
                for j in range(8):
                    for i in range(4):
                        with block("C"): ...

        (A trace replays it as ``sch.reorder(ordered_loops=[...])``.)"""
        handles = _loop_list(ordered_loops, kwargs, "ordered_loops", "reorder")
        if not handles:
            return
        locs = [self._get_loop(h) for h in handles]
        fors: list[For] = [loc.stmt for loc in locs]  # type: ignore[misc]
        names = [f.loop_var.name for f in fors]
        if len({id(f) for f in fors}) != len(fors):
            raise self._error(f"reorder: a loop is given twice in {names}", fors[0])
        by_depth = sorted(locs, key=lambda loc: len(loc.path))
        outer, inner = by_depth[0], by_depth[-1]
        for loc in by_depth:
            if loc is not inner and all(p is not loc.stmt for p in inner.path):
                a, b = loc.stmt.loop_var.name, inner.stmt.loop_var.name  # type: ignore[attr-defined]
                raise self._error(
                    f"reorder: loops {a!r} and {b!r} are not in one loop nest (neither is "
                    "inside the other); only loops of one chain can be reordered",
                    {loc.stmt: f"{a!r}", inner.stmt: f"{b!r}"},
                )
        start = next(k for k, p in enumerate(inner.path) if p is outer.stmt)
        chain: list[Stmt] = [*inner.path[start:], inner.stmt]
        for node, below in zip(chain, chain[1:]):
            if not isinstance(node, For) or node.body is not below:
                what = _describe(node.body) if isinstance(node, For) else _describe(node)
                raise self._error(
                    f"reorder of {names}: the loops are not perfectly nested: there is {what} "
                    "between them. Only loops with nothing but the next loop in their body "
                    "can be reordered (move the other statement out with compute_at, or "
                    "reorder loops inside it)",
                    node,
                )
        chain_fors: list[For] = chain  # type: ignore[assignment]
        chosen = {id(f) for f in fors}
        positions = [k for k, f in enumerate(chain_fors) if id(f) in chosen]
        new_chain = list(chain_fors)
        for pos, f in zip(positions, fors):
            new_chain[pos] = f
        for k, f in enumerate(new_chain):
            inner_vars = {id(g.loop_var) for g in new_chain[k:]}
            if any(
                uses_var(e, lambda v, inner=inner_vars: id(v) in inner)  # type: ignore[misc]
                for e in (f.min, f.extent)
            ):
                raise self._error(
                    f"reorder: the bounds of loop {f.loop_var.name!r} (range({f.min}, "
                    f"{f.min} + {f.extent})) use a loop that would be moved inside it",
                    f,
                )
        self._check_ordered_stays_outside(chain_fors, new_chain)
        body: Stmt = chain_fors[-1].body
        for f in reversed(new_chain):
            body = dataclasses.replace(f, body=body)
        self._update(state.replace(self._func, chain_fors[0], body))
        self._record("reorder", {"ordered_loops": list(handles)}, None)

    def _check_ordered_stays_outside(self, chain: list[For], new_chain: list[For]) -> None:
        """A loop bound to an ordered (scan) variable (a te.scan's time loop) may not move
        inside another loop: the step ``t`` of every column may read any column of step
        ``t - 1``, so every column's step ``t - 1`` must be done first."""
        blocks = [loc.stmt for loc in state.walk(chain[-1].body)
                  if isinstance(loc.stmt, BlockRealize)]  # fmt: skip
        for k, f in enumerate(chain):
            var = f.loop_var
            ordered = [
                (br.block.name, iv.var.name)
                for br in blocks
                for iv, value in zip(br.block.iter_vars, br.iter_values)
                if iv.kind is IterKind.ORDERED and _mentions_var(value, var)
            ]
            if not ordered:
                continue
            before = {id(g) for g in chain[:k]}
            now = new_chain[: next(j for j, g in enumerate(new_chain) if g is f)]
            moved = [g for g in now if id(g) not in before]
            if moved:
                block_name, var_name = ordered[0]
                raise self._error(
                    f"reorder: loop {f.loop_var.name!r} runs the steps of the ordered (scan) "
                    f"variable {var_name} of block {block_name!r} and would move inside "
                    f"{moved[0].loop_var.name!r}; each step may read every element of the "
                    "step before, so the time loop stays outside the loops it was outside "
                    "of (reorder the loops inside it instead)",
                    f,
                )
