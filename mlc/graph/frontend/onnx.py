"""``graph.from_onnx(model)``: convert an ONNX ModelProto (or a path to one).

onnx is optional; without it ``from_onnx`` raises an ImportError that says so. Supported ops:
Gemm, MatMul, Add, Sub, Mul, Div, Relu, Sigmoid, Tanh, Conv, MaxPool, AveragePool,
GlobalAveragePool, BatchNormalization, Flatten, Reshape, Transpose, Concat, Softmax,
LogSoftmax, Identity; and from :mod:`mlc.graph.frontend.onnx_nn` MatMul of any rank,
LayerNormalization, Gelu, Sqrt, Exp, Neg.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mlc.errors import GraphError
from mlc.graph import ir
from mlc.graph.frontend.onnx_nn import SUPPORTED_NN, convert_nn
from mlc.graph.ops import nn as gnn
from mlc.graph.ops import tensor as gt

_UNSUPPORTED = object()  # what _convert returns for an op it does not know

SUPPORTED = ("Gemm, MatMul, Add, Sub, Mul, Div, Relu, Sigmoid, Tanh, Conv, MaxPool, AveragePool, "
             "GlobalAveragePool, BatchNormalization, Flatten, Reshape, Transpose, Concat, "
             "Softmax, LogSoftmax, Identity, Constant, " + SUPPORTED_NN)


def _attrs(node: Any, onnx: Any) -> dict[str, Any]:
    out = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    return {k: onnx.numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v
            for k, v in out.items()}


def _pads(p: Sequence[int] | None) -> tuple[int, int, int, int]:
    if not p:
        return (0, 0, 0, 0)
    return (int(p[0]), int(p[1]), int(p[2]), int(p[3]))  # onnx: t, l, b, r


def _plain_window(op: str, a: dict[str, Any]) -> None:
    """Refuse the window attributes mlc's conv2d and pools do not have (they would be
    silently ignored): automatic padding, ceil rounding, dilated pooling."""
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID", "NOTSET", "VALID"):
        raise GraphError(f"from_onnx: {op} with auto_pad={a['auto_pad']!r} is not supported; "
                         "export with explicit pads")
    if a.get("ceil_mode", 0):
        raise GraphError(f"from_onnx: {op} with ceil_mode=1 is not supported (mlc rounds "
                         "the output size down)")
    if op != "Conv" and any(d != 1 for d in a.get("dilations", ())):
        raise GraphError(f"from_onnx: {op} with dilations {a['dilations']} is not supported")


def _softmax(fn: Any, x: Any, a: dict[str, Any], opset: int) -> Any:
    """Before opset 13, Softmax(axis) flattens the input to 2-d at ``axis`` (default 1) and
    normalizes over everything from ``axis`` on; from 13, over the one axis (default -1)."""
    if opset >= 13:
        return fn(x, axis=a.get("axis", -1))
    axis = a.get("axis", 1) % x.ndim
    if axis == x.ndim - 1:
        return fn(x, axis=-1)
    flat = gt.reshape(x, (int(np.prod(x.shape[:axis], dtype=np.int64)), -1))
    return gt.reshape(fn(flat, axis=-1), x.shape)


def _convert(op: str, xs: list[Any], a: dict[str, Any], opset: int = 13) -> Any:
    if op in ("Conv", "MaxPool", "AveragePool"):
        _plain_window(op, a)
    if op == "Gemm":
        x, w = xs[0], xs[1]
        if a.get("transA", 0):
            x = gt.transpose(x)
        y = gnn.dense(x, w) if a.get("transB", 0) else gnn.matmul(x, w)
        if a.get("alpha", 1.0) != 1.0:
            y = y * float(a["alpha"])
        if len(xs) > 2:
            c = xs[2] if a.get("beta", 1.0) == 1.0 else xs[2] * float(a["beta"])
            y = y + c
        return y
    table = {"Add": gt.add, "Sub": gt.subtract, "Mul": gt.multiply, "Div": gt.divide}
    if op in table:
        return table[op](xs[0], xs[1])
    if op == "Relu":
        return gnn.relu(xs[0])
    if op == "Sigmoid":
        return gt.sigmoid(xs[0])
    if op == "Tanh":
        return gt.tanh(xs[0])
    if op == "Constant":
        return ir.const(np.asarray(a["value"]), name="constant")
    if op == "Identity":
        return xs[0]
    if op == "Conv":
        y = gnn.conv2d(xs[0], xs[1], strides=tuple(a.get("strides", (1, 1))),
                       padding=_pads(a.get("pads")), dilation=tuple(a.get("dilations", (1, 1))),
                       groups=a.get("group", 1))
        return gnn.bias_add(y, xs[2]) if len(xs) > 2 else y
    if op == "MaxPool":
        return gnn.max_pool2d(xs[0], tuple(a["kernel_shape"]), tuple(a.get("strides", (1, 1))),
                              _pads(a.get("pads")))
    if op == "AveragePool":
        return gnn.avg_pool2d(xs[0], tuple(a["kernel_shape"]), tuple(a.get("strides", (1, 1))),
                              _pads(a.get("pads")),
                              count_include_pad=bool(a.get("count_include_pad", 0)))
    if op == "GlobalAveragePool":
        return gnn.global_avg_pool2d(xs[0])
    if op == "BatchNormalization":
        x, gamma, beta, mean, var = xs[:5]
        return gnn.batch_norm(x, gamma, beta, mean, var, epsilon=a.get("epsilon", 1e-5))
    if op == "Flatten":
        axis = a.get("axis", 1)
        return gt.reshape(xs[0], (int(np.prod(xs[0].shape[:axis])), -1))
    if op == "Reshape":
        shape = [int(s) for s in xs[1].value]
        shape = [xs[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
        return gt.reshape(xs[0], shape)
    if op == "Transpose":
        return gt.transpose(xs[0], a.get("perm"))
    if op == "Concat":
        return gt.concatenate(xs, axis=a["axis"])
    if op == "Softmax":
        return _softmax(gnn.softmax, xs[0], a, opset)
    if op == "LogSoftmax":
        return _softmax(gnn.log_softmax, xs[0], a, opset)
    return convert_nn(op, xs, a, _UNSUPPORTED)


def from_onnx(model: Any, shape: Mapping[str, Sequence[int]] | None = None,
              convert_map: Mapping[str, Any] | None = None) -> ir.Graph:
    """Convert an ONNX model; ``shape`` overrides input shapes (e.g. a dynamic batch).

    ``convert_map`` takes the caller's converters first, in the torch importers' style:
    ``{"Erf": lambda bb, node_map, node: bb.emit(graph.<op>(node_map[node.input[0]]))}``,
    where ``node_map`` maps the model's tensor names to graph values and ``node`` is the
    ONNX node (``node.input``, ``node.attribute``)."""
    from mlc.graph.frontend.torch import GraphBuilder

    mine = dict(convert_map or {})
    bb = GraphBuilder()
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("graph.from_onnx needs the onnx package (pip install onnx)") from e
    if isinstance(model, str):
        model = onnx.load(model)
    g = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    env: dict[str, Any] = {}
    for init in g.initializer:
        env[init.name] = ir.const(numpy_helper.to_array(init), name=init.name)
    inputs = []
    for inp in g.input:
        if inp.name in env:
            continue
        tt = inp.type.tensor_type
        dims = [d.dim_value for d in tt.shape.dim]
        if shape and inp.name in shape:
            dims = list(shape[inp.name])
        elif any(d <= 0 for d in dims):
            raise GraphError(f"from_onnx: input {inp.name!r} has a dynamic shape "
                             f"{[d.dim_param or d.dim_value for d in tt.shape.dim]}; give it "
                             f"with from_onnx(model, shape={{{inp.name!r}: (...)}})")
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type) if tt.elem_type else None
        v = ir.var(inp.name, dims, str(dtype) if dtype is not None else "float32")
        inputs.append(v)
        env[inp.name] = v
    for k, node in enumerate(g.node):
        xs = [env[n] for n in node.input if n]
        if node.op_type in mine:
            env[node.output[0]] = mine[node.op_type](bb, env, node)
            continue
        out = _convert(node.op_type, xs, _attrs(node, onnx), opset)
        if out is _UNSUPPORTED:
            raise GraphError(
                f"from_onnx: no conversion for op {node.op_type}, node {k} "
                f"{node.name or '(unnamed)'!r} (inputs {list(node.input)}, outputs "
                f"{list(node.output)}); mlc converts {SUPPORTED}. Give from_onnx a "
                f"converter for it, one line:\n    convert_map={{{node.op_type!r}: lambda bb, "
                "node_map, node: bb.emit(graph.<op>(node_map[node.input[0]]))}")
        env[node.output[0]] = out
    return ir.Graph(inputs, [env[o.name] for o in g.output])
