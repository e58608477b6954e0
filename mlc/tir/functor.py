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
from collections.abc import Callable, Mapping
from typing import Any

from mlc.tir.expr import CommReducer, IterVar, PrimExpr, Range, Var
from mlc.tir.stmt import Allocate, Block, Buffer, BufferRegion, KernelLaunch, PrimFunc, Stmt

# Fields that refer to a definition elsewhere rather than own a subtree: a BufferLoad's
# buffer is not re-visited as a node of its own unless a visitor asks (visit_Buffer).
_NODE_TYPES = (PrimExpr, Stmt, Range, IterVar, BufferRegion, Buffer, PrimFunc)


# Where a buffer is *defined*: its shape and strides are expressions of the program (code
# generation emits an Allocate's shape as run-time code), walked there, once, before the other
# fields. Everywhere else (a BufferLoad's buffer) the buffer is only referred to.
_DEFINES: dict[type, str] = {Allocate: "buffer", Block: "alloc_buffers",
                             KernelLaunch: "shared", PrimFunc: "params"}

_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


_NODE, _TUPLE, _LEAF = 1, 2, 0
_VALUE_KIND: dict[type, int] = {}
"""Per class of a field's value: a node to visit, a tuple to walk, or a leaf (a dtype
string, an int, a name); looked up instead of testing isinstance against every node type."""


def _value_kind(cls: type) -> int:
    kind = _VALUE_KIND.get(cls)
    if kind is None:
        if issubclass(cls, _NODE_TYPES):
            kind = _NODE
        else:
            kind = _TUPLE if issubclass(cls, tuple) else _LEAF
        _VALUE_KIND[cls] = kind
    return kind


class _Dispatch:
    """Which ``visit_<NodeName>`` method (or None: walk the fields) a visitor class uses
    for each node class, looked up once per pair: the walk is the compiler's inner loop
    (every pass and the code generators), and ``getattr`` with a built name on every node
    was a tenth of a build. Each visitor class gets its own table (``__init_subclass__``),
    so a class defined inside a function is collected with its table."""

    _visit_methods: dict[type, Callable[..., Any] | None]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._visit_methods = {}

    @classmethod
    def _method_for(cls, node_cls: type) -> Callable[..., Any] | None:
        method: Callable[..., Any] | None = getattr(cls, "visit_" + node_cls.__name__, None)
        cls._visit_methods[node_cls] = method
        return method


def defined_buffers(node: Any) -> tuple[Buffer, ...]:
    """The buffers ``node`` defines (an Allocate's buffer, a block's ``alloc_buffers``, a
    kernel's shared buffers, a function's parameters); () for every other node."""
    name = _DEFINES.get(type(node))
    if name is None:
        return ()
    value = getattr(node, name)
    return value if isinstance(value, tuple) else (value,)


class IRVisitor(_Dispatch):
    """Calls ``visit_<ClassName>(node)`` when defined, else walks the node's fields.

    Where a node defines buffers (:func:`defined_buffers`), the walk first visits each one's
    shape and strides (:meth:`visit_buffer_definition`): they are run-time code too. A buffer
    that is only referred to (a load's, a store's) is not walked again (``visit_Buffer``).
    """

    def visit(self, node: Any) -> None:
        node_cls = type(node)
        try:
            method = self._visit_methods[node_cls]
        except KeyError:
            method = self._method_for(node_cls)
        if method is not None:
            method(self, node)
        else:
            self.generic_visit(node)

    def generic_visit(self, node: Any) -> None:
        if isinstance(node, CommReducer):
            return  # the reducer's own variables are not part of the program
        node_cls = type(node)
        if node_cls in _DEFINES:  # rare (Allocate, Block...): one lookup for the others
            for buf in defined_buffers(node):
                self.visit_buffer_definition(buf)
        for name in _field_names(node_cls):
            value = getattr(node, name)
            kind = _value_kind(type(value))
            if kind == _NODE:
                self.visit(value)
            elif kind == _TUPLE:
                self._visit_value(value)

    def _visit_value(self, value: Any) -> None:
        if isinstance(value, _NODE_TYPES):
            self.visit(value)
        elif isinstance(value, tuple):
            for v in value:
                self._visit_value(v)

    def visit_buffer_definition(self, buf: Buffer) -> None:
        """Visit the expressions of a buffer where it is defined: its shape and strides."""
        for expr in (*buf.shape, *buf.strides):
            if isinstance(expr, _NODE_TYPES):
                self.visit(expr)

    # A buffer referred to (by a load, a store, a region): its definition was walked where
    # it is defined; a visitor that wants every reference defines visit_Buffer.
    def visit_Buffer(self, node: Buffer) -> None:
        pass


class IRMutator(_Dispatch):
    """Calls ``visit_<ClassName>(node)`` when defined, else rebuilds the node from its visited
    fields (only if something changed).

    Where a node defines buffers, their shapes and strides are visited too
    (:meth:`visit_buffer_definition`); a buffer whose shape changed (a variable substituted
    in ``n * 4``) is rebuilt, and every reference to it under the node (loads, stores,
    regions) is made to the new one: loads and stores share a buffer by identity.
    """

    def visit(self, node: Any) -> Any:
        node_cls = type(node)
        try:
            method = self._visit_methods[node_cls]
        except KeyError:
            method = self._method_for(node_cls)
        if method is not None:
            return method(self, node)
        return self.generic_visit(node)

    def generic_visit(self, node: Any) -> Any:
        if isinstance(node, CommReducer):
            return node
        node_cls = type(node)
        remap: dict[Buffer, Buffer] = {}
        if node_cls in _DEFINES:  # rare (Allocate, Block...): one lookup for the others
            for buf in defined_buffers(node):
                new_buf = self.visit_buffer_definition(buf)
                if new_buf is not buf:
                    remap[buf] = new_buf
        changes: dict[str, Any] | None = None
        for name in _field_names(node_cls):
            value = getattr(node, name)
            kind = _value_kind(type(value))
            if kind == _NODE:
                new = self.visit(value)
            elif kind == _TUPLE:
                new = self._visit_value(value)
            else:
                continue
            if new is not value:
                if changes is None:
                    changes = {}
                changes[name] = new
        result = node if changes is None else dataclasses.replace(node, **changes)
        return _ReplaceBuffers(remap).visit(result) if remap else result

    def visit_buffer_definition(self, buf: Buffer) -> Buffer:
        """The buffer with its shape and strides visited; ``buf`` itself when they are
        unchanged (the same ``data`` variable either way)."""
        shape = tuple(self._visit_value(e) for e in buf.shape)
        strides = tuple(self._visit_value(e) for e in buf.strides)
        if all(a is b for a, b in zip((*shape, *strides), (*buf.shape, *buf.strides))):
            return buf
        return dataclasses.replace(buf, shape=shape, strides=strides)

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


class _ReplaceBuffers(IRMutator):
    """Refer to the rebuilt buffers of a definition (see :meth:`IRMutator.generic_visit`)."""

    def __init__(self, mapping: Mapping[Buffer, Buffer]) -> None:
        self.mapping = mapping

    def visit_Buffer(self, node: Buffer) -> Any:
        return self.mapping.get(node, node)


class _PostOrder(IRVisitor):
    def __init__(self, fn: Callable[[Any], None]) -> None:
        self.fn = fn

    def visit(self, node: Any) -> None:
        super().visit(node)
        self.fn(node)


def post_order_visit(node: Any, fn: Callable[[Any], None]) -> None:
    """Call ``fn`` on every expression and statement under ``node``, children first."""
    _PostOrder(fn).visit(node)


class _Substitute(IRMutator):
    def __init__(self, mapping: Mapping[Var, PrimExpr]) -> None:
        self.mapping = mapping

    def visit_Var(self, node: Var) -> Any:
        return self.mapping.get(node, node)


def substitute(node: Any, mapping: Mapping[Var, PrimExpr]) -> Any:
    """Replace variables by expressions everywhere under ``node``, the shapes of the buffers
    defined under it included (such a buffer is rebuilt and its loads and stores refer to
    the new one); a buffer only referred to under ``node`` (a parameter's) keeps its shape."""
    if not mapping:
        return node
    return _Substitute(mapping).visit(node)


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


class _Search(IRVisitor):
    def __init__(self, pred: Callable[[Any], bool]) -> None:
        self.pred = pred

    def visit(self, node: Any) -> None:
        if self.pred(node):
            raise _Found
        super().visit(node)


def contains(node: Any, pred: Callable[[Any], bool]) -> bool:
    """True when some expression or statement under ``node`` (``node`` included) satisfies
    ``pred``; stops at the first one. The shapes and strides of the buffers defined under
    ``node`` are searched too."""
    try:
        _Search(pred).visit(node)
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
