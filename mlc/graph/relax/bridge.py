"""IRModules and graphs: convert both ways, optimize, build, run.

* :func:`to_graph` turns a function of op calls into a :class:`mlc.graph.Graph`;
  :func:`from_graph` turns a graph back into an IRModule: one binding per op, or, once
  ``graph.optimize`` has fused it, one prim_func per fused group called with ``call_tir``
  (the course's fused, lowered module).
* :func:`build` (what ``mlc.build(mod)`` calls) compiles every prim_func with ``mlc.build``
  and returns an :class:`Executable`: ``ex["main"](x, w0, ...)`` runs the graph-level
  function, ``ex["linear0"](x, w, b, out)`` a prim_func. A function of op calls only is
  compiled whole by ``graph.build`` (fused, memory-planned, one native call).
* :func:`from_fx` is the course's ``from_fx``: a torch.fx graph to an IRModule, with the
  caller's ``call_function_map`` / ``call_module_map`` saying how each node maps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mlc.errors import GraphError
from mlc.graph.ir import Call as GCall
from mlc.graph.ir import Constant as GConstant
from mlc.graph.ir import Graph, Node, call
from mlc.graph.ir import Var as GVar
from mlc.graph.mutator import BlockBuilder
from mlc.graph.relax.expr import (
    CALL_TIR,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    GlobalVar,
    Tuple,
    Var,
    call_tir,
    const,
    op_def,
)
from mlc.script.ir_module import IRModule
from mlc.tir.stmt import PrimFunc

__all__ = ["to_graph", "from_graph", "optimize", "build", "Executable", "VirtualMachine",
           "from_fx"]


def _function(obj: IRModule | Function, name: str = "main") -> Function:
    if isinstance(obj, Function):
        return obj
    fn = obj[name]
    if not isinstance(fn, Function):
        raise GraphError(f"{name!r} is a prim_func, not a graph-level function")
    return fn


def to_graph(obj: IRModule | Function, name: str = "main") -> Graph:
    """The graph of a function whose bindings are op calls (no ``call_tir``)."""
    fn = _function(obj, name)
    values: dict[int, Node] = {}
    inputs = []
    for p in fn.params:
        if p.struct_info is None:
            raise GraphError(f"parameter {p.name_hint} needs a type R.Tensor(shape, dtype)")
        v = GVar(p.name_hint, p.struct_info)
        values[id(p)] = v
        inputs.append(v)

    def node(e: Expr) -> Node:
        if isinstance(e, Var):
            if id(e) not in values:
                raise GraphError(f"{e.name_hint} is used before it is bound")
            return values[id(e)]
        if isinstance(e, Constant):
            return GConstant(e.data, e.name)
        if isinstance(e, Call):
            if e.op is CALL_TIR:
                raise GraphError(
                    "this function calls prim_funcs with call_tir; only a function of "
                    "high-level ops (relax.add, relax.nn.dense...) converts to a graph")
            return call(op_def(e.op), *[node(a) for a in e.args], **e.attrs)
        raise GraphError(f"cannot convert {e!r} to a graph node")

    for b in fn.bindings():
        values[id(b.var)] = node(b.value)
    body = fn.body
    outs = list(body.fields) if isinstance(body, Tuple) else [body]
    return Graph(inputs, [node(o) for o in outs])


def from_graph(g: Graph, name: str = "main", mod: IRModule | None = None) -> IRModule:
    """The IRModule of a graph: after ``graph.optimize`` (fused groups), each group becomes a
    prim_func called with ``call_tir``; before, each op is one binding."""
    out = IRModule(dict(mod.functions) if mod is not None else {})
    values: dict[Node, Expr] = {}
    params = []
    for v in g.inputs:
        p = Var(v.name, v.type)
        values[v] = p
        params.append(p)
    bindings: list[tuple[Var, Expr]] = []
    outputs = set(g.outputs)
    counter = [0]

    def bind(n: Node, value: Expr) -> Var:
        is_out = n in outputs
        name_ = f"gv{counter[0]}" if is_out else f"lv{counter[0]}"
        counter[0] += 1
        var = (Var if is_out else DataflowVar)(name_, value.struct_info)
        bindings.append((var, value))
        values[n] = var
        return var

    def arg(n: Node) -> Expr:
        if n in values:
            return values[n]
        if isinstance(n, GConstant):
            c = const(n.value, name=n.name)
            values[n] = c
            return c
        raise GraphError(f"internal: {n!r} has no value yet")

    if g.groups is None:
        for n in g.calls():
            bind(n, Call(n.op, [arg(a) for a in n.args], n.attrs))
    else:
        from mlc import te
        from mlc.graph.to_te import lower_group

        for grp in g.groups:
            if any(n.op.topi is None for n in grp.nodes):
                for n in grp.nodes:
                    bind(n, Call(n.op, [arg(a) for a in n.args], n.attrs))
                continue
            lowered = lower_group(grp)
            fname = _fresh(out, "".join(c if c.isalnum() else "_" for c in grp.name))
            prim = te.create_prim_func([*lowered.params, lowered.output])
            out.functions[fname] = dataclasses.replace(prim, name=fname)
            bind(grp.root, call_tir(GlobalVar(fname), [arg(a) for a in lowered.inputs],
                                    grp.root.type))
    from mlc.graph.relax.expr import Binding

    block = DataflowBlock([Binding(v, e) for v, e in bindings])
    rets = [arg(o) for o in g.outputs]
    body: Expr = rets[0] if len(rets) == 1 else Tuple(rets)
    out.functions[name] = Function(params, [block] if bindings else [], body, name)
    return out


def _fresh(mod: IRModule, base: str) -> str:
    name, n = base, 0
    while name in mod.functions:
        n += 1
        name = f"{base}_{n}"
    return name


def optimize(mod: IRModule, name: str = "main") -> IRModule:
    """Fold constants, fuse operators and plan memory on the graph of ``mod[name]``, and
    return the module with one prim_func per fused kernel, called with ``call_tir``."""
    from mlc.graph.passes import optimize as graph_optimize

    g = graph_optimize(to_graph(mod, name))
    keep = {k: f for k, f in mod.functions.items() if k != name}
    return from_graph(g, name, IRModule(keep, mod.name))


# ---------------------------------------------------------------------------------------------
# running


class Executable:
    """What ``mlc.build(mod)`` returns: ``ex["main"](*arrays)`` runs a graph-level function
    and returns its output; ``ex["mm_relu"](a, b, c)`` runs a compiled prim_func;
    ``ex(*arrays)`` runs ``main``."""

    def __init__(self, mod: IRModule, target: Any = "llvm") -> None:
        from mlc import driver

        self.mod = mod
        self.target = target
        self.kernels: dict[str, Any] = {}
        self.graph_modules: dict[str, Any] = {}
        for name, f in mod.functions.items():
            if isinstance(f, PrimFunc):
                self.kernels[name] = driver.build(f, target=target)
        for name, f in mod.functions.items():
            if isinstance(f, Function) and not any(
                    isinstance(b.value, Call) and b.value.op is CALL_TIR
                    for b in f.bindings()) and _all_native(f):
                from mlc.graph.build import build as graph_build
                from mlc.graph.passes import optimize as graph_optimize

                self.graph_modules[name] = graph_build(graph_optimize(to_graph(f)),
                                                       target=str(target))

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name in self.kernels:
            return self.kernels[name]
        if name in self.graph_modules:
            gm, fn = self.graph_modules[name], self.mod[name]
            return lambda *args: _single(gm(**{p.name_hint: a
                                              for p, a in zip(fn.params, args)}))
        fn = self.mod[name]
        return lambda *args: run_function(self.mod, fn, args, self.kernels)

    def __call__(self, *args: Any) -> Any:
        return self["main"](*args)


def _single(outs: list[np.ndarray]) -> Any:
    return outs[0] if len(outs) == 1 else tuple(outs)


def _all_native(fn: Function) -> bool:
    return all(isinstance(b.value, Call) and b.value.op.topi is not None
               for b in fn.bindings())


def VirtualMachine(ex: Executable, device: Any = None) -> Executable:  # noqa: N802
    """``relax.VirtualMachine(ex, tvm.cpu())`` in the course: the executable runs itself."""
    return ex


def build(mod: IRModule, target: Any = "llvm") -> Executable:
    return Executable(mod, target)


def run_function(mod: IRModule, fn: Function, args: Sequence[Any],
                 kernels: Mapping[str, Any]) -> Any:
    """Interpret ``fn`` binding by binding: ``call_tir`` allocates the output and calls the
    compiled prim_func; an op call runs the op's numpy reference."""
    if len(args) != len(fn.params):
        raise GraphError(f"{fn.name} takes {len(fn.params)} arguments "
                         f"({', '.join(p.name_hint for p in fn.params)}), got {len(args)}")
    env: dict[int, Any] = {}
    for p, a in zip(fn.params, args):
        arr = np.ascontiguousarray(np.asarray(a))
        if p.struct_info is not None and arr.shape != p.struct_info.shape:
            raise GraphError(f"argument {p.name_hint} must have shape {p.struct_info.shape}, "
                             f"got {arr.shape}")
        env[id(p)] = arr

    def value(e: Expr) -> Any:
        if isinstance(e, Var):
            return env[id(e)]
        if isinstance(e, Constant):
            return e.data
        if isinstance(e, Tuple):
            return tuple(value(f) for f in e.fields)
        if isinstance(e, Call):
            if e.op is CALL_TIR:
                gv, targs = e.args
                assert isinstance(gv, GlobalVar) and isinstance(targs, Tuple)
                if gv.name_hint not in kernels:
                    raise GraphError(f"call_tir: the module has no prim_func "
                                     f"{gv.name_hint!r}")
                t = e.sinfo_args[0]
                out = np.empty(t.shape, t.dtype)
                kernels[gv.name_hint](*[value(a) for a in targs.fields], out)
                return out
            out = np.asarray(e.op.ref(*[value(a) for a in e.args], **e.attrs))
            return out.astype(e.dtype, copy=False) if e.struct_info is not None else out
        raise GraphError(f"cannot run {e!r}")

    for b in fn.bindings():
        env[id(b.var)] = value(b.value)
    return value(fn.body)


# ---------------------------------------------------------------------------------------------
# torch.fx


def from_fx(fx_mod: Any, input_shapes: Sequence[Sequence[int]],
            call_function_map: Mapping[Any, Callable[..., Any]] | None = None,
            call_module_map: Mapping[type, Callable[..., Any]] | None = None,
            call_method_map: Mapping[str, Callable[..., Any]] | None = None) -> IRModule:
    """The course's ``from_fx``: walk a ``torch.fx.symbolic_trace``\\ d module and build an
    IRModule with a BlockBuilder. ``call_function_map[target](bb, node_map, node)`` maps a
    function node (``torch.matmul``, ``operator.add``); ``call_module_map[type](bb, node_map,
    node, module)`` a submodule (``torch.nn.Linear``); ``call_method_map["view"](bb,
    node_map, node)`` a method. Each returns the graph-level value (usually ``bb.emit(...)``
    or ``bb.emit_te(...)``).

    A node the maps do not name is converted by the defaults ``graph.from_torch`` uses
    (:func:`mlc.graph.frontend.torch.convert_node`: matmul, ``@``, linear, relu, add, mul,
    flatten, reshape, softmax, conv2d, max_pool2d, batch_norm...), its graph nodes emitted
    as bindings; anything else is a GraphError naming the node and the converter to add."""
    import torch
    import torch.fx

    from mlc.graph.frontend.torch import user_converter

    maps = (dict(call_function_map or {}), dict(call_module_map or {}),
            dict(call_method_map or {}))
    if not isinstance(fx_mod, torch.fx.GraphModule):
        fx_mod = torch.fx.symbolic_trace(fx_mod)
    named = dict(fx_mod.named_modules())
    bb = BlockBuilder()
    node_map: dict[Any, Any] = {}
    inputs: list[Var] = []
    output: Any = None
    shapes = list(input_shapes)
    with bb.function("main"):
        with bb.dataflow():
            for node in fx_mod.graph.nodes:
                if node.op == "placeholder":
                    if len(inputs) >= len(shapes):
                        raise GraphError(f"from_fx: input {node.target!r} has no shape; "
                                         f"input_shapes gives {len(shapes)}")
                    v = Var(str(node.target), _tensor(shapes[len(inputs)]))
                    node_map[node] = v
                    inputs.append(v)
                elif node.op == "get_attr":
                    node_map[node] = map_param(_fetch_attr(fx_mod, node.target))
                elif node.op == "output":
                    out = node.args[0]
                    if isinstance(out, (tuple, list)):
                        if len(out) != 1:
                            raise GraphError("from_fx: a forward() with several outputs; "
                                             "return one tensor")
                        out = out[0]
                    output = bb.emit_output(node_map[out])
                else:
                    mine = user_converter(node, named, *maps)
                    node_map[node] = (mine(bb, node_map, node) if mine is not None
                                      else _default(bb, node_map, node, named, torch))
        bb.emit_func_output(output, inputs)
    return bb.get()


def _default(bb: BlockBuilder, node_map: dict[Any, Any], node: Any, named: dict[str, Any],
             torch: Any) -> Any:
    """Convert ``node`` with the graph-level default converter: its relax arguments become
    graph variables, and the graph nodes it makes are emitted as bindings, in order."""
    from mlc.graph.frontend.torch import convert_node

    proxies: dict[int, tuple[GVar, Expr]] = {}

    def proxy(a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            a = node_map[a]
        if isinstance(a, Constant):
            return GConstant(a.data, a.name)
        if isinstance(a, Expr):
            if a.struct_info is None:
                raise GraphError(f"from_fx: the value of {node.name!r}'s argument has no "
                                 "known shape (a call_te result? give it out_sinfo)")
            v = GVar(f"__arg{len(proxies)}", a.struct_info)
            proxies[id(v)] = (v, a)
            return v
        if isinstance(a, (list, tuple)):
            return type(a)(proxy(x) for x in a)
        return a

    args = [proxy(a) for a in node.args]
    kwargs = {k: proxy(v) for k, v in node.kwargs.items()}
    result = convert_node(node, args, kwargs, named, torch, importer="from_fx")
    values: dict[int, Any] = {k: e for k, (_, e) in proxies.items()}

    def emit(n: Any) -> Any:
        if not isinstance(n, Node):
            return n
        if id(n) in values:
            return values[id(n)]
        if isinstance(n, GConstant):
            out: Any = const(n.value, name=n.name)
        elif isinstance(n, GCall):
            out = bb.emit(Call(n.op, [emit(a) for a in n.args], dict(n.attrs)))
        else:
            raise GraphError(f"from_fx: internal: {n!r} has no value")
        values[id(n)] = out
        return out

    if isinstance(result, (list, tuple)) and any(isinstance(r, Node) for r in result):
        raise GraphError(f"from_fx: {node.name!r} makes several tensors; mlc's from_fx keeps "
                         "one per node")
    return emit(result)


def _tensor(shape: Sequence[int]) -> Any:
    from mlc.graph.relax.expr import TensorStructInfo

    return TensorStructInfo(shape, "float32")


def map_param(param: Any) -> Constant:
    """A torch parameter as a graph-level constant (the course's ``map_param``)."""
    data = param.data if hasattr(param, "data") else param
    arr = data.detach().cpu().numpy() if hasattr(data, "detach") else np.asarray(data)
    return const(arr.astype("float32"))


def _fetch_attr(fx_mod: Any, target: str) -> Any:
    obj = fx_mod
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _is_graph_call(n: Node) -> bool:
    return isinstance(n, GCall)
