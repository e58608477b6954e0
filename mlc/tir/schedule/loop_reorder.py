"""Schedule primitive ``reorder``: permute the loops of one perfectly nested chain.

A loop bound to an ordered (scan) variable may not move inside another loop.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mlc.tir.arith.linear import expr_key
from mlc.tir.expr import (
    Add,
    BufferLoad,
    IterKind,
    Max,
    Min,
    Mul,
    PrimExpr,
    Sub,
)
from mlc.tir.functor import collect, substitute, uses_var
from mlc.tir.schedule import state
from mlc.tir.schedule.base import ScheduleBase
from mlc.tir.schedule.dependence import conflicting_access, describe
from mlc.tir.schedule.loop_helpers import _describe, _loop_list, _mentions_var
from mlc.tir.schedule.trace import LoopRV
from mlc.tir.stmt import Block, BlockRealize, BufferStore, For, IfThenElse, Stmt


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

        Loops whose order the result depends on keep their relative order: the reduction
        loops of a block whose update is not a commutative ``C = C op value``
        (``B[vi] = A[vi, vk] - B[vi]``), and the loops along which a block reads what another
        iteration wrote (a running sum ``A[vi, vj + 1] += A[vi, vj]``: ``j_0`` and ``j_1`` of
        its split cannot swap, ``i`` may move past both). Such a reorder raises
        ScheduleError.

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
        self._check_dependences_keep_order(chain_fors, new_chain)
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

    def _check_dependences_keep_order(self, chain: list[For], new_chain: list[For]) -> None:
        """Loops whose iterations depend on one another keep their relative order.

        Two kinds of block make the order of some loops matter: a reduction whose update is
        not a commutative ``C = C op value`` (``C = A - C``, ``C = C * 0.5 + A``, ``C = A``:
        the order of the reduction steps changes the result), and a block that reads what
        another iteration writes (``A[vi, vj + 1] = A[vi, vj + 1] + A[vi, vj]``, a running
        sum along ``j``). Other loops may move freely around them."""
        body = chain[-1].body
        outer = [body] if isinstance(body, BlockRealize) else state.child_block_realizes(body)
        for top, br in [(t, leaf) for t in outer for leaf in _leaf_blocks(t)]:
            carrying, why = self._carrying_loops(chain, br)
            old = [f for f in chain if id(f) in carrying]
            new = [f for f in new_chain if id(f) in carrying]
            if old != new:
                a, b = next((x, y) for x, y in zip(old, new) if x is not y)
                order = ", ".join(repr(f.loop_var.name) for f in old)
                raise self._error(
                    f"reorder: {why}; the loops {order} must keep this order, and the new "
                    f"order would put {b.loop_var.name!r} where {a.loop_var.name!r} was. "
                    "Reorder only the other loops"
                    + (", or write the update as `C = C op value` with op one of + * max "
                       "min (which may run in any order)" if "reduction" in why else ""),
                    {a: "keeps its place", top: "depends on the order"},
                )

    def _carrying_loops(self, chain: list[For], br: BlockRealize) -> tuple[set[int], str]:
        """The loops of ``chain`` (by id) whose order matters to ``br``, and why."""
        block = br.block
        reduce_values = [v for iv, v in zip(block.iter_vars, br.iter_values)
                         if iv.kind is not IterKind.SPATIAL]
        if reduce_values and not _order_free_update(block):
            loops = {id(f) for f in chain
                     if any(_mentions_var(v, f.loop_var) for v in reduce_values)}
            return loops, (f"block {block.name!r} is a reduction whose update "
                           f"({_update_text(block)}) gives another result when its steps "
                           "run in another order")
        found: set[int] = set()
        why = ""
        for f in chain:
            conflict = None if _order_free_update(block) else conflicting_access(f, br)
            if conflict is not None:
                found.add(id(f))
                why = why or (f"{describe(block, *conflict)}, so one iteration reads what "
                              "another wrote")
        return found, why


def _leaf_blocks(br: BlockRealize) -> list[BlockRealize]:
    """``br`` or, for a blockized block, the blocks inside it with their bindings written in
    terms of the loops (``vk = vk0 * 2 + k_2`` with ``vk0 = k_0 * 3 + k_1`` becomes
    ``k_0 * 6 + k_1 * 2 + k_2``), so that their dependences show on the outer loops."""
    inner = state.child_block_realizes(br.block.body)
    if not inner:
        return [br]
    outer_binding = dict(zip([iv.var for iv in br.block.iter_vars], br.iter_values))
    found = []
    for child in inner:
        values = tuple(substitute(v, outer_binding) for v in child.iter_values)
        found += _leaf_blocks(dataclasses.replace(child, iter_values=values))
    return found


def _order_free_update(block: Block) -> bool:
    """Is the block's body ``C[idx] = C[idx] op value`` (op one of + * max min, or
    ``C - value``), with ``value`` not reading C, perhaps under an ``if``? Then its steps
    may run in any order (up to float rounding)."""
    body = block.body
    if isinstance(body, IfThenElse) and body.else_case is None:
        body = body.then_case
    if not isinstance(body, BufferStore):
        return False
    value = body.value
    key = expr_key(body.indices)

    def is_acc(e: PrimExpr) -> bool:
        return (isinstance(e, BufferLoad) and e.buffer is body.buffer
                and expr_key(e.indices) == key)

    def free(e: PrimExpr) -> bool:
        return not collect(e, lambda n: isinstance(n, BufferLoad) and n.buffer is body.buffer)

    if isinstance(value, (Add, Mul, Max, Min)):
        return (is_acc(value.a) and free(value.b)) or (is_acc(value.b) and free(value.a))
    if isinstance(value, Sub):
        return is_acc(value.a) and free(value.b)
    return False


def _update_text(block: Block) -> str:
    body = block.body
    text = str(body.then_case if isinstance(body, IfThenElse) else body).strip()
    return text.splitlines()[0] if text else "?"
