"""The graph IR: a DAG of op nodes over statically shaped tensors.

A graph value is a :class:`Node`: an input :class:`Var`, a :class:`Constant` (weights), or a
:class:`Call` of a registered op on other nodes. Nodes are immutable and compare by identity
(two ``relu(x)`` calls are two nodes until common-subexpression elimination merges them).
Types are inferred when a node is made, so a shape mismatch raises at the line that made it::

    x = graph.var("x", shape=(1, 784))
    h = graph.nn.relu(graph.nn.dense(x, graph.const(W1)) + graph.const(b1))
    g = graph.Graph([x], [h])
    print(g)        # one line per node
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlc.errors import GraphError
from mlc.graph.op import OpDef, OpPattern, TensorType, get_op

_ids = itertools.count()


class Node:
    """Base class of graph values. ``node.type`` is a :class:`TensorType`; ``shape`` and
    ``dtype`` are shortcuts. Python's ``+ - * /`` and unary ``-`` build ops."""

    type: TensorType

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def dtype(self) -> str:
        return self.type.dtype

    @property
    def ndim(self) -> int:
        return len(self.type.shape)

    def __add__(self, other: Any) -> Call:
        return call("add", self, other)

    def __radd__(self, other: Any) -> Call:
        return call("add", other, self)

    def __sub__(self, other: Any) -> Call:
        return call("subtract", self, other)

    def __rsub__(self, other: Any) -> Call:
        return call("subtract", other, self)

    def __mul__(self, other: Any) -> Call:
        return call("multiply", self, other)

    def __rmul__(self, other: Any) -> Call:
        return call("multiply", other, self)

    def __truediv__(self, other: Any) -> Call:
        return call("divide", self, other)

    def __rtruediv__(self, other: Any) -> Call:
        return call("divide", other, self)

    def __neg__(self) -> Call:
        return call("negative", self)

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Var(Node):
    """A graph input, fed at run time by name."""

    name: str
    type: TensorType

    def __repr__(self) -> str:
        return f"Var({self.name}: {self.type})"


@dataclass(frozen=True, eq=False)
class Constant(Node):
    """A tensor known at compile time (weights). ``value`` is a read-only numpy array."""

    value: np.ndarray
    name: str = ""
    type: TensorType = field(init=False)

    def __post_init__(self) -> None:
        value = np.array(self.value, order="C")
        check_dtype(value.dtype, f"const {self.name or '?'}")
        value.setflags(write=False)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "type", TensorType(tuple(value.shape), str(value.dtype)))

    def __repr__(self) -> str:
        return f"Constant({self.name or '?'}: {self.type})"


@dataclass(frozen=True, eq=False)
class Call(Node):
    """``op(*args, **attrs)``; ``attrs`` holds hashable values only (ints, floats, tuples)."""

    op: OpDef
    args: tuple[Node, ...]
    attrs: dict[str, Any]
    type: TensorType

    def __repr__(self) -> str:
        return f"Call({self.op.name}: {self.type})"


#: the dtypes a graph value may have: what the code generators compile
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")


def check_dtype(dtype: Any, what: str) -> str:
    """``dtype`` as a string mlc compiles, or a GraphError naming ``what`` and the choices."""
    try:
        name = str(np.dtype(dtype))
    except TypeError:
        name = None
    if name not in DTYPES:
        raise GraphError(f"{what}: dtype {name or dtype!r} cannot be compiled; use one of "
                         f"{', '.join(DTYPES)}")
    return name


def var(name: str, shape: Sequence[int], dtype: str = "float32") -> Var:
    """A graph input called ``name`` with a static shape."""
    try:
        shape_t = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise GraphError(f"var {name!r}: shape must be a tuple of ints, got {shape!r}") from None
    if any(s <= 0 for s in shape_t):
        raise GraphError(f"var {name!r}: every dimension must be positive, got {shape_t}")
    return Var(name, TensorType(shape_t, check_dtype(dtype, f"var {name!r}")))


def const(value: Any, dtype: str | None = None, name: str = "") -> Constant:
    """A compile-time tensor: a numpy array (copied) or a Python scalar (float32 by default)."""
    if dtype is None and not isinstance(value, np.ndarray):
        dtype = "float32"
    try:
        arr = np.array(value, dtype=dtype)
    except (OverflowError, TypeError, ValueError) as e:
        raise GraphError(f"const {name or '?'}: {value!r} is not a {dtype} array ({e})") from None
    check_dtype(arr.dtype, f"const {name or '?'}")
    return Constant(arr, name)


def _scalar_const(value: Any, dtype: str) -> Constant:
    """A Python/numpy scalar operand as a constant of the other operand's ``dtype``, refused
    when it would change: ``x * 2.5`` on an int32 ``x`` is not ``x * 2``."""
    arr = np.asarray(value)
    if np.dtype(dtype).kind in "iub" and arr.dtype.kind not in "iub":
        f = float(value)
        if not np.isfinite(f) or f != int(f):
            raise GraphError(f"the scalar {value!r} is not an integer, and the other operand "
                             f"is {dtype}: an integer graph cannot hold it (use a float "
                             "input, or an integer scalar)")
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise GraphError(f"the scalar {value!r} does not fit in {dtype} "
                             f"({info.min}..{info.max}), the other operand's dtype")
    return const(value, dtype)


def as_node(value: Any, like: Node | None = None) -> Node:
    """``value`` as a node: nodes pass through; Python scalars and arrays become constants
    (a scalar takes the dtype of ``like``, the other operand)."""
    if isinstance(value, Node):
        return value
    if isinstance(value, (int, float, bool, np.number)):
        return _scalar_const(value, like.dtype if like is not None else "float32")
    if isinstance(value, np.ndarray):
        return const(value)
    raise GraphError(f"cannot use {type(value).__name__} {value!r} as a graph value; "
                     "use graph.var(...) for inputs or graph.const(array) for weights")


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


def call(op_name: str | OpDef, *args: Any, **attrs: Any) -> Call:
    """Make a node ``op(*args, **attrs)``, inferring its type (errors name the operands)."""
    op = op_name if isinstance(op_name, OpDef) else get_op(op_name)
    like = next((a for a in args if isinstance(a, Node)), None)
    nodes = tuple(as_node(a, like) for a in args)
    if op.num_inputs is not None and len(nodes) != op.num_inputs:
        raise GraphError(f"{op.name} takes {op.num_inputs} inputs, got {len(nodes)}")
    attrs = {k: _freeze(v) for k, v in attrs.items()}
    try:
        ty = op.infer([n.type for n in nodes], attrs)
    except GraphError as e:
        operands = ", ".join(f"{_describe(n)} of shape {n.shape}" for n in nodes)
        raise GraphError(f"{op.name}({operands}): {e}") from None
    return Call(op, nodes, attrs, ty)


def _describe(n: Node) -> str:
    if isinstance(n, Var):
        return f"%{n.name}"
    if isinstance(n, Constant):
        return f"const {n.name}" if n.name else "a constant"
    assert isinstance(n, Call)
    return f"{n.op.name}(...)"


@dataclass(frozen=True)
class FusedGroup:
    """A set of call nodes that become ONE kernel. ``nodes`` are in topological order and
    ``root`` (the last one) is the only node used outside the group. ``anchor`` is the node
    whose schedule the group takes (the dense/conv2d it grew around, or the root)."""

    gid: int
    nodes: tuple[Call, ...]
    anchor: Call
    pattern: OpPattern

    @property
    def root(self) -> Call:
        return self.nodes[-1]

    def inputs(self) -> list[Node]:
        """The values the kernel reads: nodes outside the group used by nodes inside it."""
        inside = set(self.nodes)
        seen: dict[Node, None] = {}
        for n in self.nodes:
            for a in n.args:
                if a not in inside:
                    seen.setdefault(a, None)
        return list(seen)

    @property
    def name(self) -> str:
        return "fused_" + "_".join(n.op.name.replace("nn.", "") for n in self.nodes)


@dataclass(frozen=True)
class MemoryPlan:
    """Where each kernel output lives: ``storage[node]`` is a storage id, ``sizes[sid]`` its
    bytes. Graph outputs get their own storage, intermediates share by liveness."""

    storage: dict[Node, int]
    sizes: tuple[int, ...]
    bytes_before: int
    bytes_after: int

    def __str__(self) -> str:
        return (f"memory plan: {len(self.storage)} intermediate tensors in {len(self.sizes)} "
                f"buffers, {self.bytes_before} bytes -> {self.bytes_after} bytes")


class Graph:
    """A computation: input vars, output nodes, and what passes learned about it.

    ``groups`` (set by :func:`mlc.graph.fuse_ops`) lists the fused kernels; ``memory`` (set by
    :func:`mlc.graph.plan_memory`) says where each intermediate lives. ``print(g)`` shows one
    line per node; ``g.to_dot()`` gives graphviz source.
    """

    def __init__(
        self,
        inputs: Sequence[Var],
        outputs: Sequence[Node] | Node,
        groups: Sequence[FusedGroup] | None = None,
        memory: MemoryPlan | None = None,
    ) -> None:
        if isinstance(outputs, Node):
            outputs = [outputs]
        self.inputs: list[Var] = list(inputs)
        self.outputs: list[Node] = [as_node(o) for o in outputs]
        self.groups: list[FusedGroup] | None = list(groups) if groups is not None else None
        self.memory = memory
        for v in self.inputs:
            if not isinstance(v, Var):
                raise GraphError(f"Graph inputs must be graph.var(...) nodes, got {v!r}")
        names = [v.name for v in self.inputs]
        if len(set(names)) != len(names):
            raise GraphError(f"Graph inputs must have distinct names, got {names}")
        free = [n for n in self.topo() if isinstance(n, Var) and n not in set(self.inputs)]
        if free:
            raise GraphError(
                f"the outputs use input(s) {[v.name for v in free]} that are not listed in "
                f"Graph(inputs=...): add them to the inputs (or make them graph.const)")

    def topo(self) -> list[Node]:
        """Every node the outputs depend on, producers before consumers (inputs first).
        A cycle (only possible by editing frozen nodes) raises a GraphError."""
        order: list[Node] = []
        seen: set[Node] = set()
        for v in self.inputs:
            seen.add(v)
            order.append(v)
        for out in self.outputs:
            stack: list[tuple[Node, int]] = [(out, 0)]
            open_: set[Node] = set()  # on the current path from ``out``
            while stack:
                node, i = stack.pop()
                if node in seen:
                    continue
                open_.add(node)
                args = node.args if isinstance(node, Call) else ()
                if i < len(args):
                    stack.append((node, i + 1))
                    if args[i] in open_:
                        raise GraphError(f"the graph has a cycle through {args[i]!r}: a node "
                                         "depends on itself")
                    if args[i] not in seen:
                        stack.append((args[i], 0))
                else:
                    open_.discard(node)
                    seen.add(node)
                    order.append(node)
        return order

    def calls(self) -> list[Call]:
        """The op nodes in topological order."""
        return [n for n in self.topo() if isinstance(n, Call)]

    def consumers(self) -> dict[Node, list[Call]]:
        """For every node, the call nodes that use it (in topological order)."""
        users: dict[Node, list[Call]] = {n: [] for n in self.topo()}
        for n in self.calls():
            for a in n.args:
                if n not in users[a]:
                    users[a].append(n)
        return users

    def group_of(self) -> dict[Node, int]:
        """Map from call node to fused group id (empty before fusion)."""
        if self.groups is None:
            return {}
        return {n: g.gid for g in self.groups for n in g.nodes}

    def with_(self, **changes: Any) -> Graph:
        """A copy with some of inputs/outputs/groups/memory replaced."""
        kw: dict[str, Any] = dict(inputs=self.inputs, outputs=self.outputs,
                                  groups=self.groups, memory=self.memory)
        kw.update(changes)
        return Graph(**kw)

    def __str__(self) -> str:
        from mlc.graph.printer import graph_to_str

        return graph_to_str(self)

    def __repr__(self) -> str:
        return self.__str__()

    def to_dot(self) -> str:
        """graphviz DOT source: one node per op with its op, shape, pattern and group."""
        from mlc.graph.printer import graph_to_dot

        return graph_to_dot(self)

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(str(self))}</pre>"


def rewrite(g: Graph, fn: Any) -> Graph:
    """Rebuild ``g`` bottom-up: ``fn(node, new_args)`` returns the replacement of each call
    (given its already-rewritten arguments) or None to keep it (with the new arguments).
    Groups and memory plans are dropped: they describe the old nodes."""
    new: dict[Node, Node] = {}
    for n in g.topo():
        if not isinstance(n, Call):
            new[n] = n
            continue
        args = tuple(new[a] for a in n.args)
        out = fn(n, args)
        if out is None:
            if all(a is b for a, b in zip(args, n.args)):
                out = n
            else:
                out = call(n.op, *args, **n.attrs)
        new[n] = out
    return Graph(g.inputs, [new[o] for o in g.outputs])


def iter_calls(nodes: Iterable[Node]) -> Iterable[Call]:
    return (n for n in nodes if isinstance(n, Call))
