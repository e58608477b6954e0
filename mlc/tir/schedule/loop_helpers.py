"""Helpers shared by the loop primitives: rebinding loop variables, predicates, products.

Module-level functions and the ``_Rebind`` mutator used by ``split``/``fuse``
(``loop_split_fuse.py``), ``reorder`` (``loop_reorder.py``) and the loop kinds
(``loop_annotations.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from mlc.errors import ScheduleError
from mlc.tir.expr import (
    And,
    IntImm,
    PrimExpr,
    Var,
    as_int,
    const,
)
from mlc.tir.functor import IRMutator, substitute, uses_var
from mlc.tir.schedule import state
from mlc.tir.schedule.simplify import IndexSimplifier
from mlc.tir.schedule.trace import LoopRV
from mlc.tir.stmt import Block, BlockRealize, For, Stmt


class _Rebind(IRMutator):
    """Substitute loop variables under a statement, then simplify every binding, predicate
    and loop bound using the ranges of the loops around it."""

    def __init__(self, mapping: dict[Var, PrimExpr], simp: IndexSimplifier) -> None:
        self.mapping = mapping
        self.simp = simp

    def visit_Var(self, v: Var) -> Any:
        return self.mapping.get(v, v)

    def visit_For(self, loop: For) -> Any:
        lo = self.simp(substitute(loop.min, self.mapping))
        ext = self.simp(substitute(loop.extent, self.mapping))
        with self.simp.loop(loop.loop_var, lo, ext):
            body = self.visit(loop.body)
        if lo is loop.min and ext is loop.extent and body is loop.body:
            return loop
        return dataclasses.replace(loop, min=lo, extent=ext, body=body)

    def visit_BlockRealize(self, br: BlockRealize) -> Any:
        values = tuple(self.simp(substitute(v, self.mapping)) for v in br.iter_values)
        pred = self.simp(substitute(br.predicate, self.mapping))
        block = self.visit(br.block)
        return BlockRealize(values, pred, block)


def _loop_list(
    positional: tuple[Any, ...], kwargs: dict[str, Any], key: str, prim: str
) -> list[LoopRV]:
    extra = set(kwargs) - {key}
    if extra:
        raise ScheduleError(f"{prim}() got unexpected keyword arguments {sorted(extra)}")
    items: list[Any] = list(positional)
    if key in kwargs:
        items += list(kwargs[key])
    if len(items) == 1 and isinstance(items[0], (list, tuple)):
        items = list(items[0])
    for h in items:
        if not isinstance(h, LoopRV):
            raise ScheduleError(f"{prim} takes loop handles (from get_loops/split/fuse), got {h!r}")
    return items


def _block_realizes(node: Stmt) -> list[BlockRealize]:
    return [loc.stmt for loc in state.walk(node) if isinstance(loc.stmt, BlockRealize)]  # type: ignore[misc]


def _add_predicate(body: Stmt, guard: PrimExpr) -> Stmt:
    """AND ``guard`` into the predicate of the block realizes under ``body`` (not those
    inside another block: the outer block's predicate already guards them)."""
    if isinstance(guard, IntImm) and guard.value:
        return body
    targets = state.child_block_realizes(body) if not isinstance(body, BlockRealize) else [body]
    mapping: dict[Stmt, Stmt | None] = {}
    for br in targets:
        pred = br.predicate
        new_pred = guard if isinstance(pred, IntImm) and pred.value else And(pred, guard)
        mapping[br] = BlockRealize(br.iter_values, new_pred, br.block)

    class _Swap(IRMutator):
        def visit(self, node: Any) -> Any:
            if isinstance(node, Stmt) and node in mapping:
                return mapping[node]
            return super().visit(node)

    return _Swap().visit(body)  # type: ignore[no-any-return]


def _product(values: Sequence[PrimExpr]) -> PrimExpr:
    out: PrimExpr | None = None
    for v in values:
        out = v if out is None else out * v
    assert out is not None
    k = [as_int(v) for v in values]
    if all(x is not None for x in k):
        total = 1
        for x in k:
            total *= x  # type: ignore[operator]
        return const(total, values[0].dtype)
    return out


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0


def _describe(node: Stmt) -> str:
    if isinstance(node, BlockRealize):
        return f"the block {node.block.name!r}"
    if isinstance(node, Block):
        return f"the block {node.name!r}"
    kind = type(node).__name__
    return {"SeqStmt": "a sequence of statements", "IfThenElse": "an if statement"}.get(
        kind, f"a {kind}"
    )


def _mentions_var(e: PrimExpr, var: Var) -> bool:
    return uses_var(e, lambda v: v is var)
