"""Walking and rewriting the IR, in the style of Python's ``ast.NodeVisitor``/``NodeTransformer``.

Subclass :class:`IRVisitor` or :class:`IRMutator` and define ``visit_<NodeName>`` for the
nodes you care about; every other node is walked field by field. A mutator rebuilds a node
only when one of its children changed, so unchanged subtrees stay the same objects.

    class CountLoads(IRVisitor):
        def __init__(self):
            self.n = 0
        def visit_BufferLoad(self, op):
            self.n += 1
            self.generic_visit(op)
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

from mlc.tir.expr import CommReducer, IterVar, PrimExpr, Range, Var
from mlc.tir.stmt import Buffer, BufferRegion, PrimFunc, Stmt

# Fields that refer to a definition elsewhere rather than own a subtree: a BufferLoad's
# buffer is not re-visited as a node of its own unless a visitor asks (visit_Buffer).
_NODE_TYPES = (PrimExpr, Stmt, Range, IterVar, BufferRegion, Buffer, PrimFunc)


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _children(node: Any) -> list[tuple[str, Any]]:
    cls: Any = type(node)  # a node class: hashable, though mypy cannot tell from type[Any]
    return [(name, getattr(node, name)) for name in _field_names(cls)]


class IRVisitor:
    """Calls ``visit_<ClassName>(node)`` when defined, else walks the node's fields."""

    def visit(self, node: Any) -> None:
        method: Callable[[Any], None] | None = getattr(
            self, "visit_" + type(node).__name__, None
        )
        if method is not None:
            method(node)
        else:
            self.generic_visit(node)

    def generic_visit(self, node: Any) -> None:
        if isinstance(node, CommReducer):
            return  # the reducer's own variables are not part of the program
        for _, value in _children(node):
            self._visit_value(value)

    def _visit_value(self, value: Any) -> None:
        if isinstance(value, _NODE_TYPES):
            self.visit(value)
        elif isinstance(value, tuple):
            for v in value:
                self._visit_value(v)

    # Buffers are definitions: a visitor sees their shape only when it asks for it.
    def visit_Buffer(self, node: Buffer) -> None:
        pass


class IRMutator:
    """Calls ``visit_<ClassName>(node)`` when defined, else rebuilds the node from its visited
    fields (only if something changed)."""

    def visit(self, node: Any) -> Any:
        method: Callable[[Any], Any] | None = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            return method(node)
        return self.generic_visit(node)

    def generic_visit(self, node: Any) -> Any:
        if isinstance(node, CommReducer):
            return node
        changes: dict[str, Any] = {}
        for name, value in _children(node):
            new = self._visit_value(value)
            if new is not value:
                changes[name] = new
        if not changes:
            return node
        return dataclasses.replace(node, **changes)

    def _visit_value(self, value: Any) -> Any:
        if isinstance(value, _NODE_TYPES):
            return self.visit(value)
        if isinstance(value, tuple):
            new = tuple(self._visit_value(v) for v in value)
            if all(a is b for a, b in zip(new, value)):
                return value
            return new
        return value

    def visit_Buffer(self, node: Buffer) -> Any:
        return node

    def visit_Var(self, node: Var) -> Any:
        return node


def post_order_visit(node: Any, fn: Callable[[Any], None]) -> None:
    """Call ``fn`` on every expression and statement under ``node``, children first."""

    class _Visitor(IRVisitor):
        def visit(self, n: Any) -> None:
            super().visit(n)
            fn(n)

    _Visitor().visit(node)


def substitute(node: Any, mapping: Mapping[Var, PrimExpr]) -> Any:
    """Replace variables by expressions everywhere under ``node`` (buffers' shapes included
    only where they appear as loads/stores, not in the buffer definitions)."""
    if not mapping:
        return node

    class _Sub(IRMutator):
        def visit_Var(self, v: Var) -> Any:
            return mapping.get(v, v)

    return _Sub().visit(node)


def uses_var(node: Any, pred: Callable[[Var], bool]) -> bool:
    """True when some variable under ``node`` satisfies ``pred``."""
    found = False

    def check(n: Any) -> None:
        nonlocal found
        if isinstance(n, Var) and pred(n):
            found = True

    post_order_visit(node, check)
    return found


class _Found(Exception):
    """Ends a :func:`contains` walk at the first match."""


def contains(node: Any, pred: Callable[[Any], bool]) -> bool:
    """True when some expression or statement under ``node`` (``node`` included) satisfies
    ``pred``; stops at the first one. Buffers' definitions are not searched."""

    class _Search(IRVisitor):
        def visit(self, n: Any) -> None:
            if pred(n):
                raise _Found
            super().visit(n)

    try:
        _Search().visit(node)
    except _Found:
        return True
    return False


def collect(node: Any, pred: Callable[[Any], bool]) -> list[Any]:
    """Every expression or statement under ``node`` that satisfies ``pred``, children first,
    each once."""
    found: list[Any] = []
    seen: set[int] = set()

    def check(n: Any) -> None:
        if id(n) not in seen and pred(n):
            seen.add(id(n))
            found.append(n)

    post_order_visit(node, check)
    return found
