"""Link the fused groups' kernels into ONE function: a whole inference is one native call.

Each group is scheduled and lowered on its own, as a kernel whose parameters are its inputs
and its output. Linking splices those lowered bodies, in the order the groups run, into one
``PrimFunc`` whose parameters are the graph's inputs, its constants and its outputs; every
intermediate becomes a buffer allocated inside the function::

    def fused_dense_add_relu(x, w1, b1, T_relu): ...        def graph(x, w1, b1, w2, b2, out):
    def fused_dense_add(T_relu, w2, b2, T_add): ...   ->        storage0 = alloc((64,))
                                                                  ... body 1, T_relu -> storage0
                                                                  ... body 2, T_add -> out

A kernel's parameter buffer is replaced by the graph's buffer for the same value (the same
``data`` variable: codegen keys memory on ``buffer.data``). Intermediates that the memory plan
puts in the same storage share one ``data`` variable and one allocation, sized for the
largest of them. Splicing happens after lowering, so each intermediate is a flat 1-d buffer
by then and sharing needs no help from the lowering passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mlc.graph.ir import Constant, Graph, Node, Var
from mlc.tir.expr import Var as TirVar
from mlc.tir.functor import IRMutator
from mlc.tir.stmt import Allocate, Buffer, PrimFunc, Stmt, seq


@dataclass
class LinkedGraph:
    """The one function of a graph: ``func`` (lowered), and the graph value behind each of
    its parameters, in order (``inputs``, then ``constants``, then ``outputs``)."""

    func: PrimFunc
    inputs: list[Var]
    constants: list[Constant]
    outputs: list[Node]

    @property
    def param_nodes(self) -> list[Node]:
        return [*self.inputs, *self.constants, *self.outputs]


class _SubstituteBuffers(IRMutator):
    """Replace every use of a buffer (a load, a store, an allocation) whose ``data``
    variable is a key of ``mapping`` by the buffer it maps to."""

    def __init__(self, mapping: dict[TirVar, Buffer]) -> None:
        self.mapping = mapping

    def visit_Buffer(self, node: Buffer) -> Buffer:
        return self.mapping.get(node.data, node)


def substitute_buffers(stmt: Stmt, mapping: dict[TirVar, Buffer]) -> Stmt:
    """``stmt`` with each buffer whose ``data`` is in ``mapping`` replaced (see above)."""
    return _SubstituteBuffers(mapping).visit(stmt)  # type: ignore[no-any-return]


def _flat(name: str, numel: int, dtype: str, data: TirVar | None = None) -> Buffer:
    return Buffer(name, (numel,), dtype, data=data)  # type: ignore[arg-type]


def link_groups(
    g: Graph, kernels: Sequence[tuple[Sequence[Node], Node, PrimFunc]], name: str = "graph"
) -> LinkedGraph:
    """One lowered PrimFunc for the whole graph.

    ``kernels`` lists, in run order, each group's ``(inputs, output node, lowered func)``:
    the func's parameters are the inputs in order, then the output."""
    outputs = list(dict.fromkeys(o for o in g.outputs if not isinstance(o, (Var, Constant))))
    used: set[Node] = set()
    for ins, _, _ in kernels:
        used.update(ins)
    constants = [n for n in g.topo() if isinstance(n, Constant) and n in used]
    names: set[str] = set()

    def unique(base: str) -> str:
        base = "".join(c if c.isalnum() else "_" for c in base) or "t"
        out, k = base, 1
        while out in names:
            out, k = f"{base}_{k}", k + 1
        names.add(out)
        return out

    params: list[Buffer] = []
    buffers: dict[Node, Buffer] = {}  # graph value -> its flat buffer inside the function
    for role, nodes in (("", g.inputs), ("c", constants), ("out", outputs)):
        for k, n in enumerate(nodes):
            base = n.name if isinstance(n, Var) else (getattr(n, "name", "") or f"{role}{k}")
            if role == "out":
                base = f"out{k}"
            param = Buffer(unique(base), tuple(n.shape), n.dtype)  # type: ignore[arg-type]
            params.append(param)
            buffers[n] = _flat(param.name, max(n.type.size, 1), n.dtype, param.data)

    # intermediates: one storage (data var) per (plan slot, dtype), sized for the largest
    storages: dict[tuple[int, str], Buffer] = {}
    plan = g.memory
    for _, out, _ in kernels:
        if out in buffers:
            continue
        slot = plan.storage.get(out, -1 - len(storages)) if plan else -1 - len(storages)
        key = (slot, out.dtype)
        numel = max(out.type.size, 1)
        have = storages.get(key)
        if have is None or int(have.shape[0]) < numel:  # type: ignore[call-overload]
            data = have.data if have is not None else TirVar(unique(f"storage{len(storages)}"),
                                                             "handle")
            storages[key] = _flat(data.name, numel, out.dtype, data)
        buffers[out] = _flat(unique(_c(out)), numel, out.dtype, storages[key].data)

    bodies: list[Stmt] = []
    for ins, out, func in kernels:
        mapping = {p.data: buffers[n] for p, n in zip(func.params, [*ins, out])}
        bodies.append(substitute_buffers(func.body, mapping))
    body = seq(*bodies)
    for buf in reversed(list(storages.values())):  # storage0 outermost, printed first
        body = Allocate(buf, body)
    linked = PrimFunc(tuple(params), body, name)
    return LinkedGraph(linked, list(g.inputs), constants, outputs)


def _c(n: Node) -> str:
    op = getattr(n, "op", None)
    return (op.name.replace("nn.", "") if op is not None else "t")


def param_arrays(linked: LinkedGraph, outputs: dict[Node, np.ndarray],
                 inputs: dict[Node, np.ndarray]) -> list[np.ndarray]:
    """The arrays to bind to the linked function's parameters, in order."""
    arrays: list[np.ndarray] = [inputs[v] for v in linked.inputs]
    arrays += [c.value for c in linked.constants]  # C-ordered already; 0-d stays 0-d
    arrays += [outputs[o] for o in linked.outputs]
    return arrays
