"""Tensor ops: elementwise math, numpy broadcasting, reductions, shape changes.

Each op is registered with its pattern, type inference and numpy reference, and gets a builder
(``graph.add(a, b)``, ``graph.sum(x, axis=1)``...) that makes the node.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from mlc.errors import GraphError
from mlc.graph.ir import Call, Node, call
from mlc.graph.op import OpPattern, TensorType, register_op

P = OpPattern
Types = Sequence[TensorType]


# -- type inference helpers ------------------------------------------------------------------
def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's broadcasting: align on the right, a 1 stretches; anything else must match."""
    out = []
    for i in range(builtins.max(len(a), len(b))):
        x = a[len(a) - 1 - i] if i < len(a) else 1
        y = b[len(b) - 1 - i] if i < len(b) else 1
        if x != y and x != 1 and y != 1:
            raise GraphError(f"shapes {a} and {b} do not broadcast (dimension {x} vs {y}); "
                             "numpy broadcasting needs equal sizes or a 1")
        out.append(builtins.max(x, y) if 1 in (x, y) else x)
    return tuple(reversed(out))


def same_dtype(ts: Types) -> str:
    dtypes = {t.dtype for t in ts}
    if len(dtypes) != 1:
        raise GraphError(f"operands have different dtypes {sorted(dtypes)}; cast one first")
    return ts[0].dtype


def need_float(t: TensorType, what: str) -> None:
    """Refuse an integer/bool operand of an op that computes in floating point (``exp``,
    ``softmax``, ``mean``...): numpy would answer in float64, the graph keeps dtypes."""
    if not t.dtype.startswith("float"):
        raise GraphError(f"{what} computes in floating point and keeps its operand's dtype; "
                         f"got {t.dtype}: make the input float32 (or dequantize it first)")


def _infer_binary(ts: Types, attrs: dict[str, Any]) -> TensorType:
    return TensorType(broadcast_shape(ts[0].shape, ts[1].shape), same_dtype(ts))


def _infer_float_binary(name: str) -> Any:
    def infer(ts: Types, attrs: dict[str, Any]) -> TensorType:
        out = _infer_binary(ts, attrs)
        need_float(out, name)
        return out
    return infer


def _infer_unary(ts: Types, attrs: dict[str, Any]) -> TensorType:
    return ts[0]


def _infer_float_unary(name: str) -> Any:
    def infer(ts: Types, attrs: dict[str, Any]) -> TensorType:
        need_float(ts[0], name)
        return ts[0]
    return infer


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` (None, an int or a tuple, negatives allowed) as sorted non-negative ints."""
    if axis is None:
        return tuple(range(ndim))
    try:
        axes = (operator.index(axis),) if not isinstance(axis, (tuple, list)) else tuple(
            operator.index(a) for a in axis)
    except TypeError:
        raise GraphError(f"axis must be an int or a tuple of ints, got {axis!r}") from None
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise GraphError(f"axis {a} is out of range for a tensor of rank {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise GraphError(f"axis {axis} names the same axis twice")
    return tuple(sorted(out))


def one_axis(axis: Any, ndim: int) -> int:
    """One axis (negatives count from the end) as a non-negative int; out of range raises
    (``softmax(x, axis=5)`` on a matrix is a mistake, not axis 1)."""
    if isinstance(axis, (tuple, list)):
        raise GraphError(f"expected one axis, got {axis!r}")
    return normalize_axes(axis, ndim)[0]


def _infer_reduce(ts: Types, attrs: dict[str, Any]) -> TensorType:
    shape = ts[0].shape
    axes = normalize_axes(attrs.get("axis"), len(shape))
    keep = attrs.get("keepdims", False)
    out = tuple(1 if i in axes else s for i, s in enumerate(shape) if keep or i not in axes)
    return TensorType(out, ts[0].dtype)


def _infer_mean(ts: Types, attrs: dict[str, Any]) -> TensorType:
    need_float(ts[0], "mean")
    return _infer_reduce(ts, attrs)


def _infer_reshape(ts: Types, attrs: dict[str, Any]) -> TensorType:
    shape, size = ts[0].shape, ts[0].size
    new = list(attrs["newshape"])
    if new.count(-1) > 1:
        raise GraphError(f"reshape to {tuple(new)}: at most one -1 is allowed")
    if any(s < -1 for s in new):
        raise GraphError(f"reshape to {tuple(new)}: sizes must be positive (or one -1)")
    known = int(np.prod([s for s in new if s != -1], dtype=np.int64))
    if -1 in new:
        if known == 0 or size % known:
            raise GraphError(f"cannot reshape {shape} ({size} elements) to {tuple(new)}")
        new[new.index(-1)] = size // known
    if int(np.prod(new, dtype=np.int64)) != size:
        raise GraphError(f"cannot reshape {shape} ({size} elements) to {tuple(new)} "
                         f"({int(np.prod(new))} elements)")
    return TensorType(tuple(new), ts[0].dtype)


def _infer_transpose(ts: Types, attrs: dict[str, Any]) -> TensorType:
    shape = ts[0].shape
    axes = attrs.get("axes")
    if axes is None:
        axes = tuple(reversed(range(len(shape))))
    if any(not -len(shape) <= a < len(shape) for a in axes) or sorted(
            a % len(shape) for a in axes) != list(range(len(shape))):
        raise GraphError(f"transpose axes {axes} are not a permutation of {len(shape)} axes")
    return TensorType(tuple(shape[a % len(shape)] for a in axes), ts[0].dtype)


def _infer_concat(ts: Types, attrs: dict[str, Any]) -> TensorType:
    if not ts:
        raise GraphError("concatenate needs at least one tensor")
    nd = len(ts[0].shape)
    if nd == 0:
        raise GraphError("concatenate joins tensors along an axis; got 0-d tensors")
    axis = normalize_axes(attrs.get("axis", 0), nd)[0]
    for t in ts[1:]:
        if len(t.shape) != nd or any(
                a != b for i, (a, b) in enumerate(zip(t.shape, ts[0].shape)) if i != axis):
            raise GraphError(f"concatenate on axis {axis}: shapes {[x.shape for x in ts]} "
                             "differ outside that axis")
    shape = list(ts[0].shape)
    shape[axis] = builtins.sum(t.shape[axis] for t in ts)
    return TensorType(tuple(shape), same_dtype(ts))


def _infer_pad(ts: Types, attrs: dict[str, Any]) -> TensorType:
    pw = attrs["pad_width"]
    if len(pw) != len(ts[0].shape):
        raise GraphError(f"pad_width {pw} needs one (before, after) pair per axis "
                         f"({len(ts[0].shape)} axes)")
    if any(w < 0 for pair in pw for w in pair):
        raise GraphError(f"pad_width {pw}: widths must be >= 0 (to crop, slice instead)")
    value = attrs.get("pad_value", 0.0)
    if not ts[0].dtype.startswith("float") and value != int(value):
        raise GraphError(f"pad_value {value} does not fit a {ts[0].dtype} tensor")
    return TensorType(tuple(s + b + a for s, (b, a) in zip(ts[0].shape, pw)), ts[0].dtype)


# -- numpy references -------------------------------------------------------------------------
def _f(fn: Any) -> Any:
    """Wrap a numpy function so the result keeps the first operand's dtype."""
    def ref(*xs: np.ndarray, **attrs: Any) -> np.ndarray:
        return np.asarray(fn(*xs, **attrs)).astype(xs[0].dtype, copy=False)
    return ref


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


def _reduce(fn: Any) -> Any:
    def ref(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
        axes = normalize_axes(axis, x.ndim)
        return np.asarray(fn(x, axis=axes, keepdims=keepdims)).astype(x.dtype)
    return ref


_BINARY: dict[str, Any] = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
           "divide": np.divide, "maximum": np.maximum, "minimum": np.minimum,
           "power": np.power}
_UNARY: dict[str, Any] = {"negative": np.negative, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
          "tanh": np.tanh, "sigmoid": _sigmoid, "erf": _erf, "abs": np.abs, "copy": np.copy}
_REDUCE: dict[str, Any] = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}

_FLOAT_ONLY = {"divide", "power", "exp", "log", "sqrt", "tanh", "sigmoid", "erf"}

for _name, _fn in _BINARY.items():
    register_op(_name, P.BROADCAST,
                _infer_float_binary(_name) if _name in _FLOAT_ONLY else _infer_binary,
                _f(_fn), topi=_name, num_inputs=2)
for _name, _fn in _UNARY.items():
    register_op(_name, P.ELEMWISE,
                _infer_float_unary(_name) if _name in _FLOAT_ONLY else _infer_unary,
                _f(_fn), topi=_name, num_inputs=1)
for _name, _fn in _REDUCE.items():
    register_op(_name, P.COMM_REDUCE, _infer_mean if _name == "mean" else _infer_reduce,
                _reduce(_fn), topi=_name, num_inputs=1)

register_op("reshape", P.INJECTIVE, _infer_reshape,
            lambda x, newshape: x.reshape(newshape), topi="reshape", num_inputs=1)
register_op("transpose", P.INJECTIVE, _infer_transpose,
            lambda x, axes=None: np.ascontiguousarray(np.transpose(x, axes)),
            topi="transpose", num_inputs=1)
register_op("concatenate", P.INJECTIVE, _infer_concat,
            lambda *xs, axis=0: np.concatenate(xs, axis=axis), topi="concatenate")
register_op("pad", P.INJECTIVE, _infer_pad,
            lambda x, pad_width, pad_value=0.0: np.pad(x, pad_width, constant_values=pad_value),
            topi="pad", num_inputs=1)
def _infer_sort(ts: Types, attrs: dict[str, Any]) -> TensorType:
    one_axis(attrs.get("axis", -1), len(ts[0].shape))
    return ts[0]


register_op("sort", P.OPAQUE, _infer_sort, lambda x, axis=-1: np.sort(x, axis=axis),
            topi=None, num_inputs=1)


# -- builders ----------------------------------------------------------------------------------
def add(a: Any, b: Any) -> Call:
    """``a + b`` with numpy broadcasting."""
    return call("add", a, b)


def subtract(a: Any, b: Any) -> Call:
    return call("subtract", a, b)


def multiply(a: Any, b: Any) -> Call:
    return call("multiply", a, b)


def divide(a: Any, b: Any) -> Call:
    return call("divide", a, b)


def maximum(a: Any, b: Any) -> Call:
    return call("maximum", a, b)


def minimum(a: Any, b: Any) -> Call:
    return call("minimum", a, b)


def power(a: Any, b: Any) -> Call:
    return call("power", a, b)


def negative(x: Node) -> Call:
    return call("negative", x)


def exp(x: Node) -> Call:
    return call("exp", x)


def log(x: Node) -> Call:
    return call("log", x)


def sqrt(x: Node) -> Call:
    return call("sqrt", x)


def erf(x: Node) -> Call:
    """The error function (ONNX Erf: exporters write the exact GELU with it)."""
    return call("erf", x)


def tanh(x: Node) -> Call:
    return call("tanh", x)


def sigmoid(x: Node) -> Call:
    return call("sigmoid", x)


def abs(x: Node) -> Call:  # noqa: A001 - numpy's name
    return call("abs", x)


def copy(x: Node) -> Call:
    return call("copy", x)


def sum(x: Node, axis: Any = None, keepdims: bool = False) -> Call:  # noqa: A001
    """Sum over ``axis`` (None: all axes)."""
    return call("sum", x, axis=axis, keepdims=keepdims)


def mean(x: Node, axis: Any = None, keepdims: bool = False) -> Call:
    return call("mean", x, axis=axis, keepdims=keepdims)


def max(x: Node, axis: Any = None, keepdims: bool = False) -> Call:  # noqa: A001
    return call("max", x, axis=axis, keepdims=keepdims)


def min(x: Node, axis: Any = None, keepdims: bool = False) -> Call:  # noqa: A001
    return call("min", x, axis=axis, keepdims=keepdims)


def _ints(v: Any, what: str) -> tuple[int, ...]:
    try:
        return tuple(operator.index(s) for s in v)
    except TypeError:
        raise GraphError(f"{what} must be a sequence of ints, got {v!r}") from None


def reshape(x: Node, newshape: Sequence[int]) -> Call:
    """A new shape with the same elements in the same (row-major) order; one -1 is inferred."""
    return call("reshape", x, newshape=_ints(newshape, "reshape's newshape"))


def transpose(x: Node, axes: Sequence[int] | None = None) -> Call:
    return call("transpose", x, axes=None if axes is None else _ints(axes, "transpose's axes"))


def concatenate(xs: Sequence[Node], axis: int = 0) -> Call:
    return call("concatenate", *xs, axis=axis)


def pad(x: Node, pad_width: Sequence[Sequence[int]], pad_value: float = 0.0) -> Call:
    """Pad with a constant: ``pad_width`` has one ``(before, after)`` pair per axis."""
    try:
        pw = tuple((operator.index(b), operator.index(a)) for b, a in pad_width)
    except (TypeError, ValueError):
        raise GraphError(f"pad_width must be one (before, after) pair of ints per axis, "
                         f"got {pad_width!r}") from None
    return call("pad", x, pad_width=pw, pad_value=float(pad_value))


def sort(x: Node, axis: int = -1) -> Call:
    """Sort along ``axis``: an OPAQUE op (never fused; runs through numpy at run time)."""
    return call("sort", x, axis=axis)
