"""Quantized ops (``graph.qnn.*``): quantize, dequantize and the int8 dense between them.

The fusion pass sees only patterns: ``qnn.dense`` anchors a group like ``nn.dense``
(OUT_ELEMWISE_FUSABLE), ``qnn.dequantize`` and ``qnn.quantize`` are elementwise, so a hidden
layer ``quantize(relu(bias_add(dequantize(qnn.dense(x, w)))))`` becomes ONE kernel whose
epilogue rescales the int32 accumulators, adds the bias, applies relu and requantizes to
the next layer's uint8 activations.

``qnn.quantize(..., bits=7)`` clips to 7 bits (uint8 0..127): a ``qnn.dense`` reading it
gets ``data_bits=7`` and runs on ``dp4a_u7``, exact on AVX2 without VNNI (``vpmaddubsw``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mlc.errors import GraphError, TEError
from mlc.graph.op import OpPattern, TensorType, register_op
from mlc.topi.x86 import quantize as topi_quantize

Types = Sequence[TensorType]
_DTYPES = ("int8", "uint8")


def quantized_range(dtype: str, bits: int = 8) -> tuple[int, int]:
    """The values a ``bits``-bit ``dtype`` quantizer produces: int8 -128..127, uint8 0..255,
    uint8 with 7 bits 0..127."""
    if dtype not in _DTYPES or not 2 <= bits <= 8:
        raise GraphError(f"qnn.quantize: dtype must be int8 or uint8 with 2..8 bits, got "
                         f"{dtype} with {bits} bits")
    return topi_quantize.quantized_range(dtype, bits)


def check_quantize(scale: Any, zero_point: Any, dtype: str, bits: int = 8) -> None:
    """Refuse a quantizer that has no meaning: a scale that is not positive and finite
    (or whose float32 inverse is not), a zero point that is not an integer of the range."""
    lo, hi = quantized_range(dtype, bits)
    try:
        topi_quantize.check_scale(scale)
    except (TEError, TypeError, ValueError):
        raise GraphError(f"qnn.quantize: the scale must be a positive finite number (with a "
                         f"finite float32 1/scale), got {scale!r}") from None
    if isinstance(zero_point, bool) or not float(zero_point).is_integer() or not (
            lo <= zero_point <= hi):
        raise GraphError(f"qnn.quantize: the zero point must be an integer in {lo}..{hi} "
                         f"for {bits}-bit {dtype}, got {zero_point!r}")


def _infer_quantize(ts: Types, attrs: dict[str, Any]) -> TensorType:
    dtype = attrs.get("dtype", "int8")
    check_quantize(attrs.get("scale", 1.0), attrs.get("zero_point", 0), dtype,
                   attrs.get("bits", 8))
    if not ts[0].dtype.startswith("float"):
        raise GraphError(f"qnn.quantize takes a float tensor, got {ts[0].dtype}")
    return TensorType(ts[0].shape, dtype)


def ref_quantize(x: np.ndarray, scale: float = 1.0, zero_point: int = 0,
                 dtype: str = "int8", bits: int = 8) -> np.ndarray:
    """numpy's form, operation for operation as the kernel computes it: in float32, times
    the float32 ``1 / scale``, ties to even, clipped; NaN becomes the zero point."""
    lo, hi = quantized_range(dtype, bits)
    inv = topi_quantize.check_scale(scale)
    xf = np.asarray(x, np.float32)
    v = np.round(xf * inv) + np.float32(zero_point)
    v = np.where(np.isnan(xf), np.float32(min(max(int(zero_point), lo), hi)), v)
    return np.clip(v, lo, hi).astype(dtype)


def _infer_dequantize(ts: Types, attrs: dict[str, Any]) -> TensorType:
    x, s = ts
    if not x.shape:
        raise GraphError("qnn.dequantize: the data needs a channel axis (the last); got a "
                         "0-d tensor")
    if x.dtype not in ("int8", "uint8", "int32"):
        raise GraphError(f"qnn.dequantize takes int8, uint8 or int32 data, got {x.dtype}")
    if s.dtype != "float32":
        raise GraphError(f"qnn.dequantize: the scale must be float32, got {s.dtype}")
    if len(s.shape) != 1 or s.shape[0] != x.shape[-1]:
        raise GraphError(f"qnn.dequantize: the scale must have one value per channel "
                         f"({x.shape[-1]}), got shape {s.shape}")
    return TensorType(x.shape, "float32")


def _ref_dequantize(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    return (x.astype(np.float32) * s.astype(np.float32)).astype(np.float32)


def _infer_dense(ts: Types, attrs: dict[str, Any]) -> TensorType:
    x, wp, comp = ts
    units = attrs["units"]
    if x.dtype not in ("uint8", "int8") or wp.dtype != "int8" or len(wp.shape) != 3:
        raise GraphError(f"qnn.dense takes uint8/int8 data and a packed int8 weight, got "
                         f"{x.dtype} and {wp.dtype} {wp.shape}")
    if -(-x.shape[-1] // 4) != wp.shape[1] or comp.shape != (units,):
        raise GraphError(f"qnn.dense: data with {x.shape[-1]} features does not fit the packed "
                         f"weight {wp.shape} / compensation {comp.shape}")
    if attrs.get("data_bits", 8) == 7 and x.dtype != "uint8":
        raise GraphError(f"qnn.dense: data_bits=7 means uint8 data below 128, got {x.dtype}")
    if len(x.shape) != 2 or not 0 < units <= wp.shape[0] * 16:
        raise GraphError(f"qnn.dense takes (batch, in) data and 1..{wp.shape[0] * 16} units, "
                         f"got data {x.shape} and units={units}")
    return TensorType((x.shape[0], units), "int32")


def _ref_dense(x: np.ndarray, wp: np.ndarray, comp: np.ndarray, units: int,
               data_bits: int = 8) -> np.ndarray:
    nb, kb, _ = wp.shape
    w = wp.reshape(nb, kb, 16, 4).transpose(0, 2, 1, 3).reshape(nb * 16, kb * 4)
    xw = x.astype(np.int64)
    if x.dtype == np.int8:
        xw = xw + 128
    acc = xw @ w[:units, : x.shape[-1]].astype(np.int64).T
    return (acc - comp).astype(np.int32)


P = OpPattern
register_op("qnn.quantize", P.ELEMWISE, _infer_quantize, ref_quantize,
            topi="x86.quantize.quantize", num_inputs=1)
register_op("qnn.dequantize", P.BROADCAST, _infer_dequantize, _ref_dequantize,
            topi="x86.quantize.dequantize", num_inputs=2)
register_op("qnn.dense", P.OUT_ELEMWISE_FUSABLE, _infer_dense, _ref_dense,
            topi="x86.dense_int8.dense_int8", num_inputs=3)
