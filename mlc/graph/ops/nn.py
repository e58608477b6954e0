"""Neural-network ops (``graph.nn.*``): dense, conv2d, pooling, normalization, softmax."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from mlc.errors import GraphError
from mlc.graph.ir import Call, Node, call
from mlc.graph.op import OpPattern, TensorType, register_op
from mlc.graph.ops.tensor import (
    _infer_unary,
    broadcast_shape,
    need_float,
    one_axis,
    same_dtype,
)

P = OpPattern
Types = Sequence[TensorType]


def _ints(v: Any, what: str) -> tuple[int, ...]:
    try:
        if not isinstance(v, (tuple, list)):
            return (operator.index(v),)
        return tuple(operator.index(x) for x in v)
    except TypeError:
        raise GraphError(f"{what} must be ints, got {v!r}") from None


def _pair(v: Any, what: str = "the value", least: int = 1) -> tuple[int, int]:
    """An int or a pair of ints, each at least ``least`` (strides, dilations, window sizes:
    a stride of 0 has no next window)."""
    t = _ints(v, what)
    if len(t) == 1:
        t = (t[0], t[0])
    if len(t) != 2:
        raise GraphError(f"{what}: expected an int or a pair, got {v!r}")
    if min(t) < least:
        raise GraphError(f"{what} must be at least {least}, got {v!r}")
    return (t[0], t[1])


def _pad4(v: Any) -> tuple[int, int, int, int]:
    """Padding as (top, left, bottom, right) from an int, (h, w), or 4 values (TVM's order)."""
    t = _ints(v, "padding")
    if len(t) == 1:
        t = (t[0],) * 4
    elif len(t) == 2:
        t = (t[0], t[1], t[0], t[1])
    elif len(t) != 4:
        raise GraphError(f"padding must be an int, (h, w) or (top, left, bottom, right); "
                         f"got {v!r}")
    if min(t) < 0:
        raise GraphError(f"padding must be >= 0, got {v!r}")
    return (t[0], t[1], t[2], t[3])


def _rank(t: TensorType, n: int, what: str) -> None:
    if len(t.shape) != n:
        raise GraphError(f"{what} must have {n} dimensions, got shape {t.shape}")


# -- dense family --------------------------------------------------------------------------------
def _infer_dense(ts: Types, attrs: dict[str, Any]) -> TensorType:
    x, w = ts
    _rank(w, 2, "the weight (units, in_features)")
    _rank(x, 2, "nn.dense's data (batch, in_features) (graph.nn.dense reshapes other ranks)")
    if x.shape[-1] != w.shape[1]:
        raise GraphError(f"dense computes x @ w.T: the last axis of x ({x.shape[-1]}) must equal "
                         f"the second axis of w ({w.shape[1]})")
    return TensorType(x.shape[:-1] + (w.shape[0],), same_dtype(ts))


def _infer_matmul(ts: Types, attrs: dict[str, Any]) -> TensorType:
    a, b = ts
    _rank(a, 2, "matmul's first operand")
    _rank(b, 2, "matmul's second operand")
    if a.shape[1] != b.shape[0]:
        raise GraphError(f"matmul needs a.shape[1] == b.shape[0], got {a.shape[1]} and "
                         f"{b.shape[0]}")
    return TensorType((a.shape[0], b.shape[1]), same_dtype(ts))


def _infer_batch_matmul(ts: Types, attrs: dict[str, Any]) -> TensorType:
    a, b = ts
    _rank(a, 3, "batch_matmul's first operand")
    _rank(b, 3, "batch_matmul's second operand")
    tb = attrs.get("transpose_b", True)
    n, k2 = (b.shape[1], b.shape[2]) if tb else (b.shape[2], b.shape[1])
    if a.shape[2] != k2 or b.shape[0] not in (1, a.shape[0]):
        raise GraphError(f"batch_matmul (transpose_b={tb}) cannot combine {a.shape} and {b.shape}")
    return TensorType((a.shape[0], a.shape[1], n), same_dtype(ts))


def _infer_dense_pack(ts: Types, attrs: dict[str, Any]) -> TensorType:
    x, wp = ts
    _rank(wp, 3, "the packed weight (units/bn, in_features, bn)")
    _rank(x, 2, "dense_pack's data (batch, in_features)")
    if x.shape[-1] != wp.shape[1]:
        raise GraphError(f"dense_pack: x's last axis {x.shape[-1]} != packed weight's in "
                         f"{wp.shape[1]}")
    return TensorType(x.shape[:-1] + (wp.shape[0] * wp.shape[2],), same_dtype(ts))


def _infer_pack(ts: Types, attrs: dict[str, Any]) -> TensorType:
    w = ts[0]
    _rank(w, 2, "the weight to pack")
    bn = attrs["bn"]
    if bn < 1 or w.shape[0] % bn:
        raise GraphError(f"pack_weight: bn={bn} must divide units={w.shape[0]}")
    return TensorType((w.shape[0] // bn, w.shape[1], bn), w.dtype)


def _ref_dense_pack(x: np.ndarray, wp: np.ndarray) -> np.ndarray:
    w = wp.transpose(0, 2, 1).reshape(-1, wp.shape[1])
    return (x @ w.T).astype(x.dtype)


def _ref_pack(w: np.ndarray, bn: int) -> np.ndarray:
    return np.ascontiguousarray(w.reshape(-1, bn, w.shape[1]).transpose(0, 2, 1))


def _ref_batch_matmul(a: np.ndarray, b: np.ndarray, transpose_b: bool = True) -> np.ndarray:
    return np.matmul(a, b.transpose(0, 2, 1) if transpose_b else b).astype(a.dtype)


register_op("nn.dense", P.OUT_ELEMWISE_FUSABLE, _infer_dense,
            lambda x, w: (x @ w.T).astype(x.dtype), topi="nn.dense", num_inputs=2)
register_op("nn.matmul", P.OUT_ELEMWISE_FUSABLE, _infer_matmul,
            lambda a, b: (a @ b).astype(a.dtype), topi="nn.matmul", num_inputs=2)
register_op("nn.batch_matmul", P.OUT_ELEMWISE_FUSABLE, _infer_batch_matmul,
            _ref_batch_matmul, topi="nn.batch_matmul", num_inputs=2)
register_op("nn.dense_pack", P.OUT_ELEMWISE_FUSABLE, _infer_dense_pack, _ref_dense_pack,
            topi="nn.dense_pack", num_inputs=2)
register_op("layout.pack_weight", P.INJECTIVE, _infer_pack, _ref_pack,
            topi="nn.pack_weight", num_inputs=1)


# -- elementwise nn ops ---------------------------------------------------------------------------
def _infer_bias_add(ts: Types, attrs: dict[str, Any]) -> TensorType:
    x, b = ts
    axis = one_axis(attrs.get("axis", 1 if len(x.shape) > 1 else 0), len(x.shape))
    if b.shape != (x.shape[axis],):
        raise GraphError(f"bias_add on axis {axis}: the bias must have shape ({x.shape[axis]},), "
                         f"got {b.shape}")
    return TensorType(x.shape, same_dtype(ts))


def _ref_bias_add(x: np.ndarray, b: np.ndarray, axis: int = 1) -> np.ndarray:
    axis %= x.ndim
    return (x + b.reshape((-1,) + (1,) * (x.ndim - 1 - axis))).astype(x.dtype)


_erf = np.frompyfunc(math.erf, 1, 1)


def _gelu(x: np.ndarray, approximate: str = "tanh") -> np.ndarray:
    if approximate == "none":  # exact: 0.5 x (1 + erf(x / sqrt(2)))
        e = np.asarray(_erf(x.astype(np.float64) / math.sqrt(2.0)), np.float64)
        return (0.5 * x * (1.0 + e)).astype(x.dtype)
    c = np.float32(math.sqrt(2.0 / math.pi))  # the tanh approximation
    return (0.5 * x * (1.0 + np.tanh(c * (x + np.float32(0.044715) * x * x * x)))).astype(x.dtype)


register_op("nn.bias_add", P.BROADCAST, _infer_bias_add, _ref_bias_add, topi="nn.bias_add",
            num_inputs=2)
register_op("nn.relu", P.ELEMWISE, _infer_unary, lambda x: np.maximum(x, 0).astype(x.dtype),
            topi="nn.relu", num_inputs=1)
def _infer_gelu(ts: Types, attrs: dict[str, Any]) -> TensorType:
    need_float(ts[0], "gelu")
    if attrs.get("approximate", "tanh") not in ("tanh", "none"):
        raise GraphError(f"gelu: approximate must be 'tanh' or 'none', got "
                         f"{attrs['approximate']!r}")
    return ts[0]


register_op("nn.gelu", P.ELEMWISE, _infer_gelu, _gelu, topi="nn.gelu", num_inputs=1)


# -- softmax & normalization -----------------------------------------------------------------------
def _ref_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


def _ref_log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    m = x - x.max(axis=axis, keepdims=True)
    return (m - np.log(np.exp(m).sum(axis=axis, keepdims=True))).astype(x.dtype)


def _infer_axis_unary(ts: Types, attrs: dict[str, Any]) -> TensorType:
    need_float(ts[0], "softmax")
    one_axis(attrs.get("axis", -1), len(ts[0].shape))
    return ts[0]


def _infer_batch_norm(ts: Types, attrs: dict[str, Any]) -> TensorType:
    x = ts[0]
    need_float(x, "batch_norm")
    axis = one_axis(attrs.get("axis", 1), len(x.shape))
    for name, t in zip(("gamma", "beta", "moving_mean", "moving_var"), ts[1:]):
        if t.shape != (x.shape[axis],):
            raise GraphError(f"batch_norm on axis {axis}: {name} must have shape "
                             f"({x.shape[axis]},), got {t.shape}")
    return TensorType(x.shape, same_dtype(ts))


def _ref_batch_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray,
                    var: np.ndarray, axis: int = 1, epsilon: float = 1e-5) -> np.ndarray:
    axis %= x.ndim
    shape = (-1,) + (1,) * (x.ndim - 1 - axis)
    scale = (gamma / np.sqrt(var + np.float32(epsilon))).reshape(shape)
    return ((x - mean.reshape(shape)) * scale + beta.reshape(shape)).astype(x.dtype)


def _infer_layer_norm(ts: Types, attrs: dict[str, Any]) -> TensorType:
    x = ts[0]
    need_float(x, "layer_norm")
    axis = one_axis(attrs.get("axis", -1), len(x.shape))
    for name, t in zip(("gamma", "beta"), ts[1:]):
        if t.shape != (x.shape[axis],):
            raise GraphError(f"layer_norm on axis {axis}: {name} must have shape "
                             f"({x.shape[axis]},), got {t.shape}")
    return TensorType(x.shape, same_dtype(ts))


def _ref_layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, axis: int = -1,
                    epsilon: float = 1e-5) -> np.ndarray:
    axis %= x.ndim
    shape = (-1,) + (1,) * (x.ndim - 1 - axis)
    mu = x.mean(axis=axis, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axis, keepdims=True)
    y = (x - mu) / np.sqrt(var + np.float32(epsilon))
    return (y * gamma.reshape(shape) + beta.reshape(shape)).astype(x.dtype)


register_op("nn.softmax", P.OUT_ELEMWISE_FUSABLE, _infer_axis_unary, _ref_softmax,
            topi="nn.softmax", num_inputs=1)
register_op("nn.log_softmax", P.OUT_ELEMWISE_FUSABLE, _infer_axis_unary, _ref_log_softmax,
            topi="nn.log_softmax", num_inputs=1)
register_op("nn.batch_norm", P.BROADCAST, _infer_batch_norm, _ref_batch_norm,
            topi="nn.batch_norm", num_inputs=5)
register_op("nn.layer_norm", P.OUT_ELEMWISE_FUSABLE, _infer_layer_norm, _ref_layer_norm,
            topi="nn.layer_norm", num_inputs=3)


# -- convolution & pooling ------------------------------------------------------------------------
def conv_out(size: int, k: int, stride: int, pad_lo: int, pad_hi: int, dil: int) -> int:
    return (size + pad_lo + pad_hi - dil * (k - 1) - 1) // stride + 1


def _window_attrs(attrs: dict[str, Any], what: str, *names: str) -> None:
    """Refuse strides/dilations/window sizes below 1 and negative padding."""
    for name in names:
        if min(attrs[name]) < 1:
            raise GraphError(f"{what}: {name} must be at least 1, got {attrs[name]}")
    if min(attrs["padding"]) < 0:
        raise GraphError(f"{what}: padding must be >= 0, got {attrs['padding']}")


def _infer_conv2d(ts: Types, attrs: dict[str, Any]) -> TensorType:
    x, w = ts
    _rank(x, 4, "conv2d's data (NCHW)")
    _rank(w, 4, "conv2d's kernel (OIHW)")
    n, c, h, wd = x.shape
    o, ci, kh, kw = w.shape
    _window_attrs(attrs, "conv2d", "strides", "dilation")
    groups = attrs.get("groups", 1)
    if groups < 1:
        raise GraphError(f"conv2d: groups must be at least 1, got {groups}")
    if c % groups or o % groups or ci * groups != c:
        raise GraphError(f"conv2d with groups={groups}: data has {c} channels, the kernel "
                         f"expects {ci} per group ({ci * groups} in all) and makes {o}")
    sh, sw = attrs["strides"]
    pt, pl, pb, pr = attrs["padding"]
    dh, dw = attrs["dilation"]
    oh, ow = conv_out(h, kh, sh, pt, pb, dh), conv_out(wd, kw, sw, pl, pr, dw)
    if oh <= 0 or ow <= 0:
        raise GraphError(f"conv2d output would be empty ({oh}x{ow}): the kernel {kh}x{kw} "
                         f"is larger than the padded input")
    return TensorType((n, o, oh, ow), same_dtype(ts))


def _pad_nchw(x: np.ndarray, padding: Sequence[int], value: float) -> np.ndarray:
    pt, pl, pb, pr = padding
    return np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=value)


def _ref_conv2d(x: np.ndarray, w: np.ndarray, strides: Sequence[int], padding: Sequence[int],
                dilation: Sequence[int], groups: int = 1) -> np.ndarray:
    n, c, _, _ = x.shape
    o, ci, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilation
    xp = _pad_nchw(x, padding, 0.0)
    win = sliding_window_view(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw]  # n, c, oh, ow, kh, kw
    og = o // groups
    outs = []
    for g in range(groups):
        xg = win[:, g * ci:(g + 1) * ci]
        wg = w[g * og:(g + 1) * og]
        outs.append(np.einsum("ncpqhw,ochw->nopq", xg, wg, optimize=True))
    return np.concatenate(outs, axis=1).astype(x.dtype)


def _infer_avg_pool(ts: Types, attrs: dict[str, Any]) -> TensorType:
    need_float(ts[0], "avg_pool2d")
    return _infer_pool(ts, attrs)


def _infer_pool(ts: Types, attrs: dict[str, Any]) -> TensorType:
    x = ts[0]
    _rank(x, 4, "pooling's data (NCHW)")
    _window_attrs(attrs, "pooling", "pool_size", "strides")
    n, c, h, w = x.shape
    kh, kw = attrs["pool_size"]
    sh, sw = attrs["strides"]
    pt, pl, pb, pr = attrs["padding"]
    oh, ow = conv_out(h, kh, sh, pt, pb, 1), conv_out(w, kw, sw, pl, pr, 1)
    if oh <= 0 or ow <= 0:
        raise GraphError(f"pool window {kh}x{kw} is larger than the padded input {h}x{w}")
    return TensorType((n, c, oh, ow), x.dtype)


def _windows(x: np.ndarray, pool_size: Sequence[int], strides: Sequence[int],
             padding: Sequence[int], value: float) -> np.ndarray:
    xp = _pad_nchw(x, padding, value)
    win = sliding_window_view(xp, tuple(pool_size), axis=(2, 3))
    return win[:, :, ::strides[0], ::strides[1]]


def lowest(dtype: Any) -> float:
    """What max pooling pads with: -inf, or the smallest integer of an integer dtype."""
    d = np.dtype(dtype)
    return -np.inf if d.kind == "f" else (int(np.iinfo(d).min) if d.kind in "iu" else 0)


def _ref_max_pool(x: np.ndarray, pool_size: Sequence[int], strides: Sequence[int],
                  padding: Sequence[int]) -> np.ndarray:
    return _windows(x, pool_size, strides, padding, lowest(x.dtype)).max(axis=(4, 5)).astype(
        x.dtype)


def _ref_avg_pool(x: np.ndarray, pool_size: Sequence[int], strides: Sequence[int],
                  padding: Sequence[int], count_include_pad: bool = False) -> np.ndarray:
    s = _windows(x, pool_size, strides, padding, 0.0).sum(axis=(4, 5))
    if count_include_pad:
        return (s / (pool_size[0] * pool_size[1])).astype(x.dtype)
    ones = np.ones((1, 1) + x.shape[2:], x.dtype)
    cnt = _windows(ones, pool_size, strides, padding, 0.0).sum(axis=(4, 5))
    return (s / cnt).astype(x.dtype)


def _infer_global_pool(ts: Types, attrs: dict[str, Any]) -> TensorType:
    _rank(ts[0], 4, "global_avg_pool2d's data (NCHW)")
    need_float(ts[0], "global_avg_pool2d")
    n, c = ts[0].shape[:2]
    return TensorType((n, c, 1, 1), ts[0].dtype)


def _infer_flatten(ts: Types, attrs: dict[str, Any]) -> TensorType:
    s = ts[0].shape
    if not s:
        raise GraphError("batch_flatten needs a batch axis; got a 0-d tensor")
    return TensorType((s[0], int(np.prod(s[1:], dtype=np.int64))), ts[0].dtype)


register_op("nn.conv2d", P.OUT_ELEMWISE_FUSABLE, _infer_conv2d, _ref_conv2d, topi="nn.conv2d",
            num_inputs=2)
register_op("nn.max_pool2d", P.OUT_ELEMWISE_FUSABLE, _infer_pool, _ref_max_pool,
            topi="nn.max_pool2d", num_inputs=1)
register_op("nn.avg_pool2d", P.OUT_ELEMWISE_FUSABLE, _infer_avg_pool, _ref_avg_pool,
            topi="nn.avg_pool2d", num_inputs=1)
register_op("nn.global_avg_pool2d", P.OUT_ELEMWISE_FUSABLE, _infer_global_pool,
            lambda x: x.mean(axis=(2, 3), keepdims=True).astype(x.dtype),
            topi="nn.global_avg_pool2d", num_inputs=1)
register_op("nn.batch_flatten", P.INJECTIVE, _infer_flatten,
            lambda x: x.reshape(x.shape[0], -1), topi="nn.flatten", num_inputs=1)


# -- builders ------------------------------------------------------------------------
def dense(x: Node, weight: Node, units: int | None = None) -> Call:
    """``x @ weight.T`` (TVM's convention: weight has shape (units, in_features)). Data of
    another rank than 2 (a torch ``Linear`` on (batch, seq, features)) is reshaped to 2-d
    around the op, as numpy's ``x @ w.T`` treats the leading axes."""
    if isinstance(x, Node) and x.ndim != 2 and x.ndim >= 1:
        lead = x.shape[:-1]
        flat = call("reshape", x, newshape=(int(np.prod(lead, dtype=np.int64)), x.shape[-1]))
        y = dense(flat, weight, units)
        return call("reshape", y, newshape=lead + (y.shape[-1],))
    out = call("nn.dense", x, weight)
    if units is not None and out.shape[-1] != units:
        raise GraphError(f"dense: units={units} but the weight makes {out.shape[-1]}")
    return out


def matmul(a: Node, b: Node) -> Call:
    """``a @ b`` for 2-d operands."""
    return call("nn.matmul", a, b)


def batch_matmul(a: Node, b: Node, transpose_b: bool = True) -> Call:
    """Per batch ``a[i] @ b[i].T`` (TVM's default) or ``a[i] @ b[i]``; b's batch may be 1."""
    return call("nn.batch_matmul", a, b, transpose_b=transpose_b)


def bias_add(x: Node, bias: Node, axis: int = 1) -> Call:
    """Add a 1-d bias along ``axis`` (channels for NCHW, features for (batch, features))."""
    return call("nn.bias_add", x, bias, axis=one_axis(axis, x.ndim))


def relu(x: Node) -> Call:
    return call("nn.relu", x)


def gelu(x: Node, approximate: str = "tanh") -> Call:
    """GELU: the tanh approximation, or ``approximate="none"`` for the exact erf form
    (PyTorch's ``nn.GELU()`` default)."""
    if approximate == "tanh":
        return call("nn.gelu", x)
    return call("nn.gelu", x, approximate=approximate)


def softmax(x: Node, axis: int = -1) -> Call:
    return call("nn.softmax", x, axis=one_axis(axis, x.ndim))


def log_softmax(x: Node, axis: int = -1) -> Call:
    return call("nn.log_softmax", x, axis=one_axis(axis, x.ndim))


def batch_norm(x: Node, gamma: Node, beta: Node, moving_mean: Node, moving_var: Node,
               axis: int = 1, epsilon: float = 1e-5) -> Call:
    """Inference-mode batch norm: ``(x - mean) / sqrt(var + eps) * gamma + beta`` per channel."""
    return call("nn.batch_norm", x, gamma, beta, moving_mean, moving_var,
                axis=one_axis(axis, x.ndim), epsilon=float(epsilon))


def layer_norm(x: Node, gamma: Node, beta: Node, axis: int = -1, epsilon: float = 1e-5) -> Call:
    return call("nn.layer_norm", x, gamma, beta, axis=one_axis(axis, x.ndim),
                epsilon=float(epsilon))


def conv2d(data: Node, weight: Node, strides: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1) -> Call:
    """2-d convolution, NCHW data and OIHW kernel; ``groups == channels`` is depthwise."""
    return call("nn.conv2d", data, weight, strides=_pair(strides, "conv2d's strides"),
                padding=_pad4(padding), dilation=_pair(dilation, "conv2d's dilation"),
                groups=_ints(groups, "conv2d's groups")[0])


def max_pool2d(data: Node, pool_size: Any = 2, strides: Any = None, padding: Any = 0) -> Call:
    return call("nn.max_pool2d", data, pool_size=_pair(pool_size, "max_pool2d's pool_size"),
                strides=_pair(strides if strides is not None else pool_size,
                              "max_pool2d's strides"),
                padding=_pad4(padding))


def avg_pool2d(data: Node, pool_size: Any = 2, strides: Any = None, padding: Any = 0,
               count_include_pad: bool = False) -> Call:
    return call("nn.avg_pool2d", data, pool_size=_pair(pool_size, "avg_pool2d's pool_size"),
                strides=_pair(strides if strides is not None else pool_size,
                              "avg_pool2d's strides"),
                padding=_pad4(padding), count_include_pad=bool(count_include_pad))


def global_avg_pool2d(data: Node) -> Call:
    return call("nn.global_avg_pool2d", data)


def batch_flatten(data: Node) -> Call:
    """(N, ...) -> (N, prod(...))."""
    return call("nn.batch_flatten", data)


flatten = batch_flatten


def pad(data: Node, pad_width: Sequence[Sequence[int]], pad_value: float = 0.0) -> Call:
    from mlc.graph.ops.tensor import pad as _pad

    return _pad(data, pad_width, pad_value)


__all__ = ["dense", "matmul", "batch_matmul", "bias_add", "relu", "gelu", "softmax",
           "log_softmax", "batch_norm", "layer_norm", "conv2d", "max_pool2d", "avg_pool2d",
           "global_avg_pool2d", "batch_flatten", "flatten", "pad", "broadcast_shape"]
