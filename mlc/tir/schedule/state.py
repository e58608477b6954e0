"""Finding and replacing things in a PrimFunc: the tree utilities every primitive uses.

A primitive reads the current PrimFunc, builds new statements, and swaps them in with
:func:`replace`. Blocks are found by name (names are unique in a function); loops by their
loop variable (a ``Var`` keeps its identity while its loop survives a transformation).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mlc.tir.expr import Var
from mlc.tir.functor import IRMutator, IRVisitor
from mlc.tir.stmt import Block, BlockRealize, Buffer, For, PrimFunc, SeqStmt, Stmt


@dataclass(frozen=True)
class Location:
    """A statement and the chain of statements above it, root first (``path[-1]`` is the
    statement's parent)."""

    stmt: Stmt
    path: tuple[Stmt, ...]

    @property
    def parent(self) -> Stmt | None:
        return self.path[-1] if self.path else None

    def enclosing_loops(self, stop_at_block: bool = True) -> list[For]:
        """The For loops around the statement, outermost first, up to the nearest block."""
        loops: list[For] = []
        for node in reversed(self.path):
            if isinstance(node, For):
                loops.append(node)
            elif stop_at_block and isinstance(node, Block):
                break
        return loops[::-1]

    def enclosing_block(self) -> Block | None:
        for node in reversed(self.path):
            if isinstance(node, Block):
                return node
        return None


def walk(node: Stmt, path: tuple[Stmt, ...] = ()) -> Iterator[Location]:
    """Every statement under ``node`` (itself included) with its path, pre-order."""
    yield Location(node, path)
    sub = (*path, node)
    for child in children(node):
        yield from walk(child, sub)


def children(node: Stmt) -> list[Stmt]:
    """The statements directly under ``node`` (a block's init comes before its body)."""
    if isinstance(node, SeqStmt):
        return list(node.seq)
    if isinstance(node, BlockRealize):
        return [node.block]
    if isinstance(node, Block):
        return [node.init, node.body] if node.init is not None else [node.body]
    out = []
    for name in ("body", "then_case", "else_case"):
        child = getattr(node, name, None)
        if isinstance(child, Stmt):
            out.append(child)
    return out


def find_block(func: PrimFunc, name: str) -> Location | None:
    """The BlockRealize of the block called ``name``."""
    for loc in walk(func.body):
        if isinstance(loc.stmt, BlockRealize) and loc.stmt.block.name == name:
            return loc
    return None


def find_loop(func: PrimFunc, var: Var) -> Location | None:
    for loc in walk(func.body):
        if isinstance(loc.stmt, For) and loc.stmt.loop_var is var:
            return loc
    return None


def all_blocks(func: PrimFunc) -> list[Location]:
    """Every BlockRealize except the root's, in program order."""
    return [
        loc
        for loc in walk(func.body)
        if isinstance(loc.stmt, BlockRealize) and loc.path
    ]


def child_block_realizes(node: Stmt) -> list[BlockRealize]:
    """The BlockRealizes under ``node`` that are not inside another block (program order)."""
    found: list[BlockRealize] = []

    def go(n: Stmt) -> None:
        if isinstance(n, BlockRealize):
            found.append(n)
            return
        for c in children(n):
            go(c)

    if isinstance(node, BlockRealize):
        node = node.block.body
    elif isinstance(node, Block):
        node = node.body
    go(node)
    return found


def names_in_use(func: PrimFunc) -> set[str]:
    """Every block name, loop/iter variable name and buffer name in ``func``."""
    names: set[str] = {b.name for b in func.params}

    class _Names(IRVisitor):
        def visit_Var(self, v: Var) -> None:
            names.add(v.name)

        def visit_Block(self, b: Block) -> None:
            names.add(b.name)
            names.update(buf.name for buf in b.alloc_buffers)
            self.generic_visit(b)

        def visit_Buffer(self, b: Buffer) -> None:
            names.add(b.name)

    _Names().visit(func.body)
    return names


def fresh_name(base: str, used: set[str]) -> str:
    """``base`` if free, else ``base_1``, ``base_2``...; the result is added to ``used``."""
    name, k = base, 0
    while name in used:
        k += 1
        name = f"{base}_{k}"
    used.add(name)
    return name


def replace(func: PrimFunc, old: Stmt, new: Stmt | None) -> PrimFunc:
    """A copy of ``func`` with the statement ``old`` (by identity) replaced by ``new``
    (``None`` removes it from its SeqStmt)."""
    return replace_many(func, {old: new})


def replace_many(func: PrimFunc, mapping: dict[Stmt, Stmt | None]) -> PrimFunc:
    class _Replace(IRMutator):
        def visit(self, node: Any) -> Any:
            if isinstance(node, Stmt) and node in mapping:
                return mapping[node]
            return super().visit(node)

        def visit_SeqStmt(self, node: SeqStmt) -> Any:
            items = [self.visit(s) for s in node.seq]
            kept = [s for s in items if s is not None]
            if all(a is b for a, b in zip(items, node.seq)):
                return node
            if len(kept) == 1:
                return kept[0]
            return SeqStmt(tuple(kept))

    body = _Replace().visit(func.body)
    return func.with_body(body)
