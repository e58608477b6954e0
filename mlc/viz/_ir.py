"""Small helpers shared by the drawings: accept what students hold, find nodes by name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mlc.errors import MLCTypeError
from mlc.tir.printer import expr_to_str
from mlc.tir.stmt import Block, BlockRealize, For, PrimFunc, Stmt


def as_func(obj: Any, args: Any = None) -> PrimFunc:
    """A PrimFunc from a PrimFunc, a ``tir.Schedule`` (its ``.mod``), a te schedule with its
    argument tensors, or a list of te tensors."""
    if isinstance(obj, PrimFunc):
        return obj
    mod = getattr(obj, "mod", None)
    if isinstance(mod, PrimFunc):
        return mod
    if hasattr(obj, "to_prim_func"):
        if args is None:
            raise MLCTypeError(
                "drawing a te schedule needs its argument tensors too, e.g. "
                "viz.loop_tree(s, [A, B, C]); or pass te.create_prim_func([A, B, C])"
            )
        func = obj.to_prim_func(list(args))
        return func if isinstance(func, PrimFunc) else as_func(func)
    if isinstance(obj, (list, tuple)):
        from mlc import te

        return te.create_prim_func(list(obj))
    raise MLCTypeError(
        "mlc.viz draws a PrimFunc, a tir.Schedule, a te schedule with its tensors, or a "
        f"list of te tensors; got {type(obj).__name__}"
    )


def children(node: Any) -> list[Stmt]:
    """The statements directly under ``node`` (loop body, block body, seq items, ...)."""
    from mlc.tir.stmt import Allocate, IfThenElse, LetStmt, SeqStmt

    if isinstance(node, PrimFunc):
        return [node.body]
    if isinstance(node, SeqStmt):
        return list(node.seq)
    if isinstance(node, (For, LetStmt, Allocate)):
        return [node.body]
    if isinstance(node, BlockRealize):
        return [node.block]
    if isinstance(node, Block):
        return [s for s in (node.init, node.body) if s is not None]
    if isinstance(node, IfThenElse):
        return [s for s in (node.then_case, node.else_case) if s is not None]
    return []


def walk(node: Any, path: tuple[Stmt, ...] = ()) -> Iterator[tuple[Stmt, tuple[Stmt, ...]]]:
    """Every statement under ``node`` with the statements above it (pre-order)."""
    for child in children(node):
        yield child, path
        yield from walk(child, (*path, child))


def find_block(func: PrimFunc, name: str) -> tuple[BlockRealize, list[For]]:
    """The realize of block ``name`` and the loops around it (outermost first)."""
    names = []
    for node, path in walk(func):
        if isinstance(node, BlockRealize):
            names.append(node.block.name)
            if node.block.name == name:
                loops: list[For] = []
                for p in path:
                    if isinstance(p, Block):  # loops of an outer block do not count
                        loops = []
                    elif isinstance(p, For):
                        loops.append(p)
                return node, loops
    raise MLCTypeError(
        f"there is no block named {name!r} in {func.name}; its blocks are: "
        + ", ".join(repr(n) for n in names if n != "root")
    )


def find_named(func: PrimFunc, name: str) -> Stmt | None:
    """The loop whose variable is called ``name``, else the block called ``name``."""
    for node, _ in walk(func):
        if isinstance(node, For) and node.loop_var.name == name:
            return node
    for node, _ in walk(func):
        if isinstance(node, BlockRealize) and node.block.name == name:
            return node
    return None


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
