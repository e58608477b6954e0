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

from mlc.errors import GraphError
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


def _infer_quantize(ts: Types, attrs: dict[str, Any]) -> TensorType:
    dtype = attrs.get("dtype", "int8")
    quantized_range(dtype, attrs.get("bits", 8))
    if not ts[0].dtype.startswith("float"):
        raise GraphError(f"qnn.quantize takes a float tensor, got {ts[0].dtype}")
    return TensorType(ts[0].shape, dtype)


def ref_quantize(x: np.ndarray, scale: float = 1.0, zero_point: int = 0,
                 dtype: str = "int8", bits: int = 8) -> np.ndarray:
    """numpy's form, operation for operation as the kernel computes it (float32)."""
    lo, hi = quantized_range(dtype, bits)
    inv = np.float32(1.0 / float(scale))
    v = np.round(x * inv) + np.float32(zero_point)
    return np.clip(v, lo, hi).astype(dtype)


def _infer_dequantize(ts: Types, attrs: dict[str, Any]) -> TensorType:
    x, s = ts
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
