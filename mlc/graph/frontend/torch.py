"""``graph.from_torch(module, input_shapes)``: trace a PyTorch module with torch.fx.

torch is optional: importing mlc never imports it; calling ``from_torch`` without it installed
raises an ImportError that says so. Supported: Linear, Conv2d, BatchNorm2d, ReLU, GELU,
Sigmoid, Tanh, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d(1), Flatten, Softmax, LogSoftmax,
LayerNorm, Dropout (identity), and the functions/methods +, -, *, /, @, matmul, linear, relu,
flatten, reshape, view, cat, softmax, conv2d, max_pool2d, batch_norm (eval), transpose/permute.

These converters are the defaults of both torch importers: ``graph.from_torch`` here and the
MLC course's ``relax.from_fx`` (:mod:`mlc.graph.relax.bridge`, which replays the graph nodes
a converter makes as bindings). Both take the caller's maps first, in the course's shape::

    graph.from_torch(model, {"x": (1, 784)},
                     call_function_map={torch.erf: lambda bb, node_map, node:
                                        bb.emit(graph.op.erf(node_map[node.args[0]]))})

and on anything else raise an error that names the fx node and shows that one line.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mlc.errors import GraphError
from mlc.graph import ir
from mlc.graph.ops import nn as gnn
from mlc.graph.ops import tensor as gt

_UNSUPPORTED = object()  # what a converter returns for an op it does not know

SUPPORTED = ("Linear, Conv2d, BatchNorm2d, ReLU, GELU, Sigmoid, Tanh, MaxPool2d, AvgPool2d, "
             "AdaptiveAvgPool2d(1), Flatten, Softmax, LogSoftmax, LayerNorm, Dropout, Identity; "
             "+ - * /, torch.add/sub/mul/div, relu, sigmoid, tanh, flatten, cat, softmax, gelu; "
             ".view .reshape .flatten .relu .permute .transpose .size")


def _unsupported(node: Any, what: str, importer: str = "from_torch") -> GraphError:
    emit = ("bb.emit(relax.op.<op>(node_map[node.args[0]]))" if importer == "from_fx"
            else "bb.emit(graph.<op>(node_map[node.args[0]]))")
    if node.op == "call_module":
        key = f"{what.split()[1]}"
        line = (f"call_module_map={{torch.nn.{key}: lambda bb, node_map, node, module: "
                f"{emit}}}")
    elif node.op == "call_method":
        line = (f"call_method_map={{{node.target!r}: lambda bb, node_map, node: {emit}}}")
    else:
        line = f"call_function_map={{{_qualified(node.target)}: lambda bb, node_map, node: {emit}}}"
    return GraphError(
        f"{importer}: no conversion for {what}, used by the traced node {node.name!r} "
        f"({node.format_node()}); mlc converts {SUPPORTED}. Give {importer} a converter for "
        f"it, one line:\n    {line}\nor rewrite that part of forward() with these")


def _qualified(fn: Any) -> str:
    """How a user names a function in a map: ``torch.cumsum``, ``operator.add``."""
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__name__", str(fn))
    if module.startswith("torch.nn.functional"):
        return f"torch.nn.functional.{name}"
    if module.startswith("torch") or module == "":
        return f"torch.{name}"
    if module in ("_operator", "operator"):
        return f"operator.{name}"
    return f"{module}.{name}"


def _np(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy().astype("float32")


def _module_op(m: Any, args: list[Any], torch: Any, where: str = "") -> Any:
    tnn = torch.nn
    x = args[0]
    prefix = "".join(c if c.isalnum() else "_" for c in where) + "_" if where else ""

    def param(t: Any, name: str) -> ir.Constant:
        return ir.const(_np(t), name=prefix + name)

    if isinstance(m, tnn.Linear):
        y = gnn.dense(x, param(m.weight, "weight"))
        return y if m.bias is None else gnn.bias_add(y, param(m.bias, "bias"),
                                                     axis=-1)
    if isinstance(m, tnn.Conv2d):
        if isinstance(m.padding, str):
            raise GraphError(f"Conv2d padding={m.padding!r}: give explicit ints")
        if m.padding_mode != "zeros":
            raise GraphError(f"from_torch: Conv2d self.{where} pads with "
                             f"padding_mode={m.padding_mode!r}; mlc's conv2d pads with zeros")
        y = gnn.conv2d(x, param(m.weight, "weight"), strides=m.stride,
                       padding=m.padding, dilation=m.dilation, groups=m.groups)
        return y if m.bias is None else gnn.bias_add(y, param(m.bias, "bias"))
    if isinstance(m, tnn.BatchNorm2d):
        if m.training or m.running_mean is None:
            raise GraphError(f"from_torch: BatchNorm2d self.{where} must be in eval mode with "
                             "running statistics (call model.eval())")
        gamma = m.weight if m.weight is not None else torch.ones_like(m.running_mean)
        beta = m.bias if m.bias is not None else torch.zeros_like(m.running_mean)
        return gnn.batch_norm(x, param(gamma, "gamma"), param(beta, "beta"),
                              param(m.running_mean, "mean"), param(m.running_var, "var"),
                              epsilon=m.eps)
    if isinstance(m, tnn.ReLU):
        return gnn.relu(x)
    if isinstance(m, tnn.GELU):
        return gnn.gelu(x, approximate=m.approximate)
    if isinstance(m, tnn.Sigmoid):
        return gt.sigmoid(x)
    if isinstance(m, tnn.Tanh):
        return gt.tanh(x)
    if isinstance(m, (tnn.MaxPool2d, tnn.AvgPool2d)) and m.ceil_mode:
        raise GraphError(f"from_torch: {type(m).__name__} self.{where} uses ceil_mode=True; "
                         "mlc pools round down (ceil_mode=False)")
    if isinstance(m, tnn.MaxPool2d) and m.dilation not in (1, (1, 1)):
        raise GraphError(f"from_torch: MaxPool2d self.{where} has dilation {m.dilation}; "
                         "mlc pools are not dilated")
    if isinstance(m, tnn.MaxPool2d):
        return gnn.max_pool2d(x, m.kernel_size, m.stride, m.padding)
    if isinstance(m, tnn.AvgPool2d) and m.divisor_override is not None:
        raise GraphError(f"from_torch: AvgPool2d self.{where} has divisor_override="
                         f"{m.divisor_override}; mlc divides by the window's size")
    if isinstance(m, tnn.AvgPool2d):
        return gnn.avg_pool2d(x, m.kernel_size, m.stride, m.padding,
                              count_include_pad=m.count_include_pad)
    if isinstance(m, tnn.AdaptiveAvgPool2d) and m.output_size in (1, (1, 1)):
        return gnn.global_avg_pool2d(x)
    if isinstance(m, tnn.Flatten):
        return _flatten(x, m.start_dim, m.end_dim)
    if isinstance(m, tnn.Softmax):
        return gnn.softmax(x, axis=m.dim if m.dim is not None else -1)
    if isinstance(m, tnn.LogSoftmax):
        return gnn.log_softmax(x, axis=m.dim if m.dim is not None else -1)
    if isinstance(m, tnn.LayerNorm):
        if len(m.normalized_shape) != 1:
            raise GraphError(f"from_torch: LayerNorm self.{where} normalizes over "
                             f"{tuple(m.normalized_shape)}; mlc's layer_norm normalizes one axis")
        n = m.normalized_shape[0]
        gamma = _np(m.weight) if m.weight is not None else np.ones(n, np.float32)
        beta = _np(m.bias) if m.bias is not None else np.zeros(n, np.float32)
        return gnn.layer_norm(x, ir.const(gamma), ir.const(beta), epsilon=m.eps)
    if isinstance(m, (tnn.Dropout, tnn.Identity)):
        return x
    return _UNSUPPORTED


def _flatten(x: Any, start: int = 0, end: int = -1) -> Any:
    """torch.flatten: the axes start..end (inclusive, negatives from the end) become one."""
    start, end = start % x.ndim, end % x.ndim
    if start > end:
        raise GraphError(f"flatten: start_dim {start} is after end_dim {end}")
    merged = int(np.prod(x.shape[start:end + 1], dtype=np.int64))
    return gt.reshape(x, x.shape[:start] + (merged,) + x.shape[end + 1:])


def _function_op(fn: Any, args: list[Any], kwargs: dict[str, Any], torch: Any) -> Any:
    F = torch.nn.functional
    binary = {operator.add: gt.add, torch.add: gt.add, operator.sub: gt.subtract,
              torch.sub: gt.subtract, operator.mul: gt.multiply, torch.mul: gt.multiply,
              operator.truediv: gt.divide, torch.div: gt.divide}
    if fn in binary:
        kw = dict(kwargs)
        alpha = kw.pop("alpha", 1)  # torch.add / torch.sub: a + alpha * b
        if kw.pop("rounding_mode", None) is not None or kw:
            return _UNSUPPORTED  # torch.div(..., rounding_mode="floor"), out=...: not these
        b = args[1]
        if alpha != 1:
            b = gt.multiply(b, alpha) if isinstance(b, ir.Node) else b * alpha
        return binary[fn](args[0], b)
    if fn in (torch.matmul, operator.matmul):
        return _matmul(args[0], args[1])
    if fn is F.linear:
        bias = args[2] if len(args) > 2 else kwargs.get("bias")
        y = gnn.dense(args[0], args[1] if len(args) > 1 else kwargs["weight"])
        return y if bias is None else gnn.bias_add(y, bias, axis=-1)
    if fn in (F.conv2d, torch.conv2d):
        return _conv2d(*args, **kwargs)
    if fn in (F.max_pool2d, torch.max_pool2d):
        return _max_pool2d(*args, **kwargs)
    if fn is F.batch_norm:
        return _batch_norm(*args, **kwargs)
    if fn is torch.reshape:
        return gt.reshape(args[0], _shape_of_args(args[0], args[1:], kwargs.get("shape")))
    if fn in (torch.relu, F.relu):
        return gnn.relu(args[0])
    if fn in (torch.sigmoid,):
        return gt.sigmoid(args[0])
    if fn in (torch.tanh,):
        return gt.tanh(args[0])
    if fn is torch.flatten:
        start = args[1] if len(args) > 1 else kwargs.get("start_dim", 0)
        end = args[2] if len(args) > 2 else kwargs.get("end_dim", -1)
        return _flatten(args[0], start, end)
    if fn is torch.cat:
        return gt.concatenate(args[0], axis=args[1] if len(args) > 1 else kwargs.get("dim", 0))
    if fn in (F.softmax, torch.softmax):
        return gnn.softmax(args[0], axis=kwargs.get("dim", args[1] if len(args) > 1 else -1))
    if fn is F.gelu:
        return gnn.gelu(args[0], approximate=kwargs.get("approximate", "none"))
    return _UNSUPPORTED


def _matmul(a: Any, b: Any) -> Any:
    """torch.matmul / ``a @ b`` for 2-d operands, an N-d ``a`` with a 2-d ``b`` (leading axes
    flattened around one matmul) and 3-d batches."""
    if a.ndim == 2 and b.ndim == 2:
        return gnn.matmul(a, b)
    if a.ndim > 2 and b.ndim == 2:
        lead = a.shape[:-1]
        flat = gt.reshape(a, (int(np.prod(lead, dtype=np.int64)), a.shape[-1]))
        return gt.reshape(gnn.matmul(flat, b), lead + (b.shape[-1],))
    if a.ndim == 3 and b.ndim == 3:
        return gnn.batch_matmul(a, b, transpose_b=False)
    raise GraphError(f"matmul of a {a.ndim}-d and a {b.ndim}-d operand: mlc converts 2-d @ 2-d, "
                     "N-d @ 2-d and 3-d @ 3-d; reshape the operands in forward()")


def _conv2d(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
            dilation: Any = 1, groups: int = 1) -> Any:
    if isinstance(padding, str):
        raise GraphError(f"conv2d padding={padding!r}: give explicit ints")
    y = gnn.conv2d(x, weight, strides=stride, padding=padding, dilation=dilation,
                   groups=groups)
    return y if bias is None else gnn.bias_add(y, bias)


def _max_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    if ceil_mode or return_indices or dilation not in (1, (1, 1), [1, 1]):
        raise GraphError("max_pool2d: mlc pools round down, without dilation or indices "
                         "(ceil_mode=False, dilation=1, return_indices=False)")
    return gnn.max_pool2d(x, kernel_size, stride if stride not in (None, [], ()) else None,
                          padding)


def _batch_norm(x: Any, running_mean: Any, running_var: Any, weight: Any = None,
                bias: Any = None, training: bool = False, momentum: float = 0.1,
                eps: float = 1e-5) -> Any:
    if training or running_mean is None or running_var is None:
        raise GraphError("batch_norm: mlc converts inference mode only (training=False, with "
                         "running statistics); call model.eval() before tracing")
    channels = x.shape[1]
    ones, zeros = ir.const(np.ones(channels, "float32")), ir.const(np.zeros(channels, "float32"))
    return gnn.batch_norm(x, weight if weight is not None else ones,
                          bias if bias is not None else zeros, running_mean, running_var,
                          epsilon=eps)


def _shape_of_args(x: Any, rest: Sequence[Any], keyword: Any = None) -> tuple[int, ...]:
    """``x.view(2, -1)``, ``x.view((2, -1))``, ``torch.reshape(x, shape=...)``: a shape whose
    one -1 is the size the others leave."""
    shape = keyword if keyword is not None else (
        rest[0] if len(rest) == 1 and isinstance(rest[0], (tuple, list)) else rest)
    dims = [int(d) for d in shape]
    if dims.count(-1) > 1:
        raise GraphError(f"reshape to {tuple(dims)}: at most one size may be -1")
    if -1 in dims:
        known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
        total = int(np.prod(x.shape, dtype=np.int64))
        if known == 0 or total % known:
            raise GraphError(f"cannot reshape {x.shape} to {tuple(dims)}")
        dims[dims.index(-1)] = total // known
    return tuple(dims)


def _method_op(name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    x = args[0]
    if name in ("view", "reshape"):
        return gt.reshape(x, _shape_of_args(x, args[1:], kwargs.get("shape")))
    if name in ("add", "mul", "sub", "div") and len(args) == 2 and not kwargs:
        return {"add": gt.add, "mul": gt.multiply, "sub": gt.subtract,
                "div": gt.divide}[name](x, args[1])
    if name == "matmul":
        return _matmul(x, args[1])
    if name == "softmax":
        return gnn.softmax(x, axis=kwargs.get("dim", args[1] if len(args) > 1 else -1))
    if name == "flatten":
        start = args[1] if len(args) > 1 else kwargs.get("start_dim", 0)
        end = args[2] if len(args) > 2 else kwargs.get("end_dim", -1)
        return _flatten(x, start, end)
    if name == "relu":
        return gnn.relu(x)
    if name == "permute":
        return gt.transpose(x, tuple(args[1:]) if len(args) > 2 else tuple(args[1]))
    if name == "transpose":
        axes = list(range(x.ndim))
        a, b = args[1] % x.ndim, args[2] % x.ndim
        axes[a], axes[b] = axes[b], axes[a]
        return gt.transpose(x, axes)
    if name == "size":
        return x.shape if len(args) == 1 else x.shape[args[1]]
    return _UNSUPPORTED


def convert_node(node: Any, args: list[Any], kwargs: dict[str, Any], modules: dict[str, Any],
                 torch: Any, importer: str = "from_torch") -> Any:
    """The default conversion of one fx node (``call_module``, ``call_function``,
    ``call_method``) whose arguments are graph values already: graph nodes for it, or a
    GraphError naming the node and the converter to add."""
    if node.op == "call_module":
        m = modules[node.target]
        out = _module_op(m, args, torch, node.target)
        if out is _UNSUPPORTED:
            raise _unsupported(node, f"module {type(m).__name__} (self.{node.target})", importer)
        return out
    if node.op == "call_function":
        out = _function_op(node.target, args, kwargs, torch)
        if out is _UNSUPPORTED:
            name = getattr(node.target, "__name__", str(node.target))
            raise _unsupported(node, f"function {name}", importer)
        return out
    if node.op == "call_method":
        out = _method_op(node.target, args, kwargs)
        if out is _UNSUPPORTED:
            raise _unsupported(node, f"method .{node.target}()", importer)
        return out
    raise GraphError(f"{importer}: fx node kind {node.op!r} ({node.name!r}) is not supported")


class GraphBuilder:
    """The ``bb`` a caller's converter gets from ``graph.from_torch``: ``bb.emit(value)``
    returns the value (graph nodes need no binding), as the course's BlockBuilder does."""

    def emit(self, value: Any, name_hint: str = "") -> Any:
        return value


def user_converter(node: Any, modules: dict[str, Any], call_function_map: Mapping[Any, Any],
                   call_module_map: Mapping[Any, Any], call_method_map: Mapping[str, Any]
                   ) -> Any:
    """The caller's converter for ``node`` as ``fn(bb, node_map, node)``, or None."""
    if node.op == "call_function" and node.target in call_function_map:
        return call_function_map[node.target]
    if node.op == "call_method" and node.target in call_method_map:
        return call_method_map[node.target]
    if node.op == "call_module":
        m = modules[node.target]
        for cls in type(m).__mro__:
            if cls in call_module_map:
                fn = call_module_map[cls]
                return lambda bb, node_map, node: fn(bb, node_map, node, m)
    return None


def from_torch(module: Any, input_shapes: Mapping[str, Sequence[int]] | Sequence[Any],
               call_function_map: Mapping[Any, Any] | None = None,
               call_module_map: Mapping[Any, Any] | None = None,
               call_method_map: Mapping[str, Any] | None = None) -> ir.Graph:
    """Trace ``module`` with torch.fx and convert it. ``input_shapes`` maps the forward's
    argument names to shapes (or is a list of shapes in argument order). The maps, as in the
    course's ``from_fx``, take precedence over the defaults: ``call_function_map[fn](bb,
    node_map, node)``, ``call_module_map[nn.Module subclass](bb, node_map, node, module)``,
    ``call_method_map["name"](bb, node_map, node)``, each returning a graph node."""
    try:
        import torch
        import torch.fx
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("graph.from_torch needs PyTorch (pip install torch)") from e
    module = module.eval()
    traced = module if isinstance(module, torch.fx.GraphModule) else \
        torch.fx.symbolic_trace(module)
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    if not isinstance(input_shapes, Mapping):
        input_shapes = {p.target: s for p, s in zip(placeholders, input_shapes)}
    env: dict[Any, Any] = {}
    inputs = []
    modules = dict(traced.named_modules())
    outputs: list[Any] = []
    bb = GraphBuilder()
    maps = (dict(call_function_map or {}), dict(call_module_map or {}),
            dict(call_method_map or {}))
    for node in traced.graph.nodes:
        def arg(a: Any) -> Any:
            if isinstance(a, torch.fx.Node):
                return env[a]
            if isinstance(a, (list, tuple)):
                return type(a)(arg(x) for x in a)
            return a

        args = [arg(a) for a in node.args]
        kwargs = {k: arg(v) for k, v in node.kwargs.items()}
        if node.op == "placeholder":
            if node.target not in input_shapes:
                raise GraphError(f"from_torch: no shape given for input {node.target!r}")
            v = ir.var(node.target, input_shapes[node.target])
            inputs.append(v)
            env[node] = v
        elif node.op == "get_attr":
            env[node] = ir.const(_np(getattr(traced, node.target)), name=node.target)
        elif node.op == "output":
            out = args[0]
            outputs = list(out) if isinstance(out, (list, tuple)) else [out]
        else:
            mine = user_converter(node, modules, *maps)
            env[node] = (mine(bb, env, node) if mine is not None
                         else convert_node(node, args, kwargs, modules, torch))
    return ir.Graph(inputs, outputs)
