"""Small helpers shared by the drawings: accept what students hold (as mlc.build does), find
nodes by name (with the schedule's walk)."""

from __future__ import annotations

from typing import Any

from mlc.driver import to_prim_func
from mlc.errors import MLCTypeError
from mlc.tir.printer import expr_to_str
from mlc.tir.schedule import state
from mlc.tir.stmt import BlockRealize, For, PrimFunc, Stmt


def as_func(obj: Any, args: Any = None) -> PrimFunc:
    """A PrimFunc from a PrimFunc, a ``tir.Schedule`` (its ``.mod``), a te schedule with its
    argument tensors, or a list of te tensors: what ``mlc.build`` accepts, converted the same
    way (:func:`mlc.driver.to_prim_func`)."""
    if hasattr(obj, "to_prim_func") and args is None:
        raise MLCTypeError(
            "drawing a te schedule needs its argument tensors too, e.g. "
            "viz.loop_tree(s, [A, B, C]); or pass te.create_prim_func([A, B, C])"
        )
    return to_prim_func(obj, args, None)


def find_block(func: PrimFunc, name: str) -> tuple[BlockRealize, list[For]]:
    """The realize of block ``name`` and the loops around it up to the nearest outer block
    (outermost first)."""
    loc = state.find_block(func, name)
    if loc is None:
        names = [b.stmt.block.name for b in state.all_blocks(func)]  # type: ignore[attr-defined]
        raise MLCTypeError(
            f"there is no block named {name!r} in {func.name}; its blocks are: "
            + ", ".join(repr(n) for n in names if n != "root")
        )
    assert isinstance(loc.stmt, BlockRealize)
    return loc.stmt, loc.enclosing_loops()


def find_named(func: PrimFunc, name: str) -> Stmt | None:
    """The loop whose variable is called ``name``, else the block called ``name``."""
    for loc in state.walk(func.body):
        if isinstance(loc.stmt, For) and loc.stmt.loop_var.name == name:
            return loc.stmt
    found = state.find_block(func, name)
    return found.stmt if found is not None else None


def loop_label(loop: For) -> str:
    """``i0 in range(0, 16)  parallel`` — the loop as one line."""
    lo = expr_to_str(loop.min)
    rng = (
        f"range({expr_to_str(loop.extent)})"
        if lo == "0"
        else f"range({lo}, {lo} + {expr_to_str(loop.extent)})"
    )
    kind = "" if loop.kind.value == "serial" else f"  [{loop.kind.value}]"
    if loop.thread_binding:
        kind = f"  [{loop.thread_binding}]"
    return f"for {loop.loop_var.name} in {rng}{kind}"
