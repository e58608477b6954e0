"""Lower a fused group to ONE te computation.

Every node of the group becomes the topi compute of its op, applied to the te tensors of its
arguments; values from outside the group (graph inputs, weights, other groups' outputs) become
placeholders. The kernel's parameters are the placeholders, then the group's output::

    group: %0 = nn.dense(%x, %w); %1 = nn.bias_add(%0, %b); %2 = nn.relu(%1)
    ->  x, w, b = te.placeholder(...); dense = topi.nn.dense(x, w)
        bias_add = topi.nn.bias_add(dense, b); relu = topi.nn.relu(bias_add)
        te.create_prim_func([x, w, b, relu])
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, TypeGuard

from mlc.errors import GraphError
from mlc.graph.ir import Call, Constant, FusedGroup, Node, Var


@dataclass
class LoweredGroup:
    """The te form of one group: ``params`` (placeholders, in ``inputs`` order), ``output``,
    and ``tensors[node]`` for every node of the group (the anchor's tensor among them)."""

    group: FusedGroup
    inputs: list[Node]
    params: list[Any]
    output: Any
    tensors: dict[Node, Any]

    @property
    def anchor(self) -> Any:
        return self.tensors[self.group.anchor]


def topi_compute(n: Call) -> Any:
    """The topi function of ``n``'s op (``op.topi`` is a dotted name inside mlc.topi)."""
    if n.op.topi is None:
        raise GraphError(f"op {n.op.name} has no te computation (it is OPAQUE and runs "
                         "through numpy)")
    mod_name, _, fn = ("." + n.op.topi).rpartition(".")
    module = importlib.import_module("mlc.topi" + mod_name)
    return getattr(module, fn)


def param_name(n: Node, i: int) -> str:
    if isinstance(n, Var):
        return n.name
    if isinstance(n, Constant) and n.name:
        return f"{n.name}"
    return f"p{i}"


def lower_group(group: FusedGroup) -> LoweredGroup:
    """The te computation of a fused group (see the module docstring)."""
    from mlc import te

    inputs = [a for a in group.inputs() if not _is_scalar_const(a)]
    tensors: dict[Node, Any] = {}
    params = []
    used: set[str] = set()
    for i, a in enumerate(inputs):
        name = param_name(a, i)
        while name in used:
            name += "_"
        used.add(name)
        t = te.placeholder(a.shape, a.dtype, name=name)
        tensors[a] = t
        params.append(t)
    for n in group.nodes:
        args = [float(a.value) if _is_scalar_const(a) else tensors[a] for a in n.args]
        tensors[n] = topi_compute(n)(*args, **n.attrs)
        _check_type(n, tensors[n])
    return LoweredGroup(group, inputs, params, tensors[group.root], tensors)


def _check_type(n: Call, t: Any) -> None:
    """The te tensor must have the node's inferred type: the linked function's buffers are
    sized from the graph's types, so a kernel computing float64 into a float32 buffer would
    write past its end."""
    shape = tuple(int(getattr(s, "value", s)) for s in t.shape)
    if str(t.dtype) != n.dtype or shape != n.shape:
        raise GraphError(f"op {n.op.name}: its te computation (mlc.topi.{n.op.topi}) makes "
                         f"{shape} {t.dtype}, but the graph inferred {n.shape} {n.dtype}; the "
                         "op's inference and its computation disagree (fix one of them)")


def _is_scalar_const(n: Node) -> TypeGuard[Constant]:
    return isinstance(n, Constant) and n.value.ndim == 0 and n.dtype.startswith("float")
