"""ONNX converters for a transformer's ops (``from_onnx`` calls these after its own table).

    MatMul                 2-d @ 2-d: nn.matmul; (..., K) @ (K, N): flattened to 2-d around it;
                           (b..., M, K) @ (b..., K, N): nn.batch_matmul over the flattened b...
    LayerNormalization     nn.layer_norm over the axes from ``axis`` on (flattened to one)
    Gelu (opset 20)        nn.gelu, ``approximate`` "none" (erf) or "tanh"
    Erf, Pow, ReduceMean   what older exporters write GELU and layer norm with
                           (x * 0.5 * (1 + Erf(x / sqrt 2)); ReduceMean, Sub, Pow 2, Sqrt)
    Sqrt, Exp, Neg         the graph level's unary math

Each one refuses what it cannot express with a GraphError naming the node's inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlc.errors import GraphError
from mlc.graph import ir
from mlc.graph.ops import nn as gnn
from mlc.graph.ops import tensor as gt

SUPPORTED_NN = ("MatMul (any rank), LayerNormalization, Gelu, Erf, Pow, ReduceMean, Sqrt, "
                "Exp, Neg")


def _prod(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def matmul(a: Any, b: Any) -> Any:
    """numpy's ``a @ b`` for the ranks ONNX MatMul takes, with constant-weight layers kept as
    2-d matmuls (so alter_op_layout packs their weights)."""
    if a.ndim < 2 or b.ndim < 2:
        raise GraphError(f"from_onnx: MatMul of shapes {a.shape} and {b.shape}: 1-d operands "
                         "are not supported; reshape them to 2-d in the model")
    if a.shape[-1] != b.shape[-2]:
        raise GraphError(f"from_onnx: MatMul of shapes {a.shape} and {b.shape}: the last axis "
                         f"of the first ({a.shape[-1]}) must equal the second-to-last of the "
                         f"second ({b.shape[-2]})")
    if b.ndim == 2:
        if a.ndim == 2:
            return gnn.matmul(a, b)
        lead = a.shape[:-1]
        flat = gt.reshape(a, (_prod(lead), a.shape[-1]))
        return gt.reshape(gnn.matmul(flat, b), lead + (b.shape[-1],))
    lead_a, lead_b = a.shape[:-2], b.shape[:-2]
    if lead_a != lead_b and _prod(lead_b) != 1:
        raise GraphError(f"from_onnx: MatMul of shapes {a.shape} and {b.shape}: the batch "
                         "axes must be equal (or the second's all 1); broadcast them in the "
                         "model")
    if a.ndim < b.ndim:
        raise GraphError(f"from_onnx: MatMul of shapes {a.shape} and {b.shape}: the second "
                         "operand has more batch axes than the first")
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    a3 = a if a.ndim == 3 else gt.reshape(a, (_prod(lead_a), m, k))
    b3 = b if b.ndim == 3 and b.shape[0] in (1, a3.shape[0]) else gt.reshape(
        b, (_prod(lead_b), k, n))
    y = gnn.batch_matmul(a3, b3, transpose_b=False)
    return y if a.ndim == 3 else gt.reshape(y, lead_a + (m, n))


def layer_norm(xs: list[Any], a: dict[str, Any]) -> Any:
    """ONNX normalizes over every axis from ``axis`` on; mlc's layer_norm over one axis, so
    those axes are flattened into one around it."""
    x, scale = xs[0], xs[1]
    axis = int(a.get("axis", -1))
    if not -x.ndim <= axis < x.ndim:
        raise GraphError(f"from_onnx: LayerNormalization with axis={axis} on an input of "
                         f"shape {x.shape}: axis must be in [{-x.ndim}, {x.ndim})")
    axis %= x.ndim
    tail = x.shape[axis:]
    size = _prod(tail)
    bias = xs[2] if len(xs) > 2 else ir.const(np.zeros(tail, x.dtype), name="ln_zero_bias")
    for name, t in (("Scale", scale), ("B", bias)):
        if _prod(t.shape) != size or t.shape != tail[len(tail) - t.ndim:]:
            raise GraphError(f"from_onnx: LayerNormalization over axes {axis}.. of {x.shape}: "
                             f"{name} has shape {t.shape}, expected {tail}")
    eps = float(a.get("epsilon", 1e-5))
    if len(tail) == 1:
        g = scale if scale.ndim == 1 else gt.reshape(scale, (size,))
        b = bias if bias.ndim == 1 else gt.reshape(bias, (size,))
        return gnn.layer_norm(x, g, b, axis=-1, epsilon=eps)
    flat = gt.reshape(x, x.shape[:axis] + (size,))
    y = gnn.layer_norm(flat, gt.reshape(scale, (size,)), gt.reshape(bias, (size,)), axis=-1,
                       epsilon=eps)
    return gt.reshape(y, x.shape)


def reduce_mean(xs: list[Any], a: dict[str, Any]) -> Any:
    """ReduceMean: axes from the attribute (before opset 18) or the second input (18 on)."""
    x = xs[0]
    axes = a.get("axes")
    if len(xs) > 1:
        if not isinstance(xs[1], ir.Constant):
            raise GraphError("from_onnx: ReduceMean with axes computed at run time is not "
                             "supported; make them a constant")
        axes = [int(v) for v in np.asarray(xs[1].value).ravel()]
    if axes is None or len(axes) == 0:
        if a.get("noop_with_empty_axes", 0):
            return x
        axes = list(range(x.ndim))
    for ax in axes:
        if not -x.ndim <= int(ax) < x.ndim:
            raise GraphError(f"from_onnx: ReduceMean over axis {ax} of a {x.ndim}-d input "
                             f"of shape {x.shape}")
    return gt.mean(x, axis=tuple(int(ax) % x.ndim for ax in axes),
                   keepdims=bool(a.get("keepdims", 1)))


def _text(v: Any, default: str) -> str:
    if v is None:
        return default
    return v.decode() if isinstance(v, bytes) else str(v)


def convert_nn(op: str, xs: list[Any], a: dict[str, Any], unsupported: Any) -> Any:
    """The converted node, or ``unsupported`` when ``op`` is not one of these."""
    if op == "MatMul":
        return matmul(xs[0], xs[1])
    if op == "LayerNormalization":
        return layer_norm(xs, a)
    if op == "Gelu":
        approx = _text(a.get("approximate"), "none")
        if approx not in ("none", "tanh"):
            raise GraphError(f"from_onnx: Gelu with approximate={approx!r}; ONNX allows "
                             "'none' and 'tanh'")
        return gnn.gelu(xs[0], approximate=approx)
    if op == "Erf":
        return gt.erf(xs[0])
    if op == "Pow":
        return gt.power(xs[0], xs[1])
    if op == "ReduceMean":
        return reduce_mean(xs, a)
    if op == "Sqrt":
        return gt.sqrt(xs[0])
    if op == "Exp":
        return gt.exp(xs[0])
    if op == "Neg":
        return gt.negative(xs[0])
    return unsupported
