"""``graph.from_torch(module, input_shapes)``: trace a PyTorch module with torch.fx.

torch is optional: importing mlc never imports it; calling ``from_torch`` without it installed
raises an ImportError that says so. Supported: Linear, Conv2d, BatchNorm2d, ReLU, GELU,
Sigmoid, Tanh, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d(1), Flatten, Softmax, LogSoftmax,
LayerNorm, Dropout (identity), and the functions/methods +, -, *, /, relu, flatten, reshape,
view, cat, softmax, transpose/permute.
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


def _unsupported(node: Any, what: str) -> GraphError:
    return GraphError(
        f"from_torch: no conversion for {what}, used by the traced node {node.name!r} "
        f"({node.format_node()}); mlc converts {SUPPORTED}. Rewrite that part of forward() "
        "with these, or compute it outside the model")


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


def _method_op(name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    x = args[0]
    if name in ("view", "reshape"):
        shape = args[1] if len(args) == 2 and isinstance(args[1], (tuple, list)) else args[1:]
        return gt.reshape(x, tuple(int(s) for s in shape))
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


def from_torch(module: Any, input_shapes: Mapping[str, Sequence[int]] | Sequence[Any]
               ) -> ir.Graph:
    """Trace ``module`` with torch.fx and convert it. ``input_shapes`` maps the forward's
    argument names to shapes (or is a list of shapes in argument order)."""
    try:
        import torch
        import torch.fx
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("graph.from_torch needs PyTorch (pip install torch)") from e
    module = module.eval()
    traced = torch.fx.symbolic_trace(module)
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    if not isinstance(input_shapes, Mapping):
        input_shapes = {p.target: s for p, s in zip(placeholders, input_shapes)}
    env: dict[Any, Any] = {}
    inputs = []
    modules = dict(traced.named_modules())
    outputs: list[Any] = []
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
        elif node.op == "call_module":
            m = modules[node.target]
            env[node] = _module_op(m, args, torch, node.target)
            if env[node] is _UNSUPPORTED:
                raise _unsupported(node, f"module {type(m).__name__} (self.{node.target})")
        elif node.op == "call_function":
            env[node] = _function_op(node.target, args, kwargs, torch)
            if env[node] is _UNSUPPORTED:
                name = getattr(node.target, "__name__", str(node.target))
                raise _unsupported(node, f"function {name}")
        elif node.op == "call_method":
            env[node] = _method_op(node.target, args, kwargs)
            if env[node] is _UNSUPPORTED:
                raise _unsupported(node, f"method .{node.target}()")
        elif node.op == "output":
            out = args[0]
            outputs = list(out) if isinstance(out, (list, tuple)) else [out]
    return ir.Graph(inputs, outputs)
