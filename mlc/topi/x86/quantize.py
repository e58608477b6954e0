"""Quantize and dequantize as te computations (the graph ops ``qnn.quantize`` /
``qnn.dequantize``); elementwise, so a fused group inlines them into its kernel's epilogue.

* ``quantize(x, scale, zero_point, dtype, bits)``: ``clip(nearbyint(x / scale) +
  zero_point)`` into ``int8`` (-128..127) or ``uint8`` (0..255; 0..127 with ``bits=7``);
  ``nearbyint`` rounds ties to even, as ``np.round`` does, so the compiled kernel and numpy
  agree bit for bit. It computes in float32 whatever the input's float type (``x`` is
  converted first), multiplying by the float32 ``1 / scale``; NaN becomes the zero point
  (the quantized 0.0), +-inf the ends of the range. ``scale`` must be positive and finite
  with a finite float32 ``1 / scale``.
* ``dequantize(x, scale)``: ``float32(x) * scale[j]``, one scale per output channel (the
  last axis), the product of the activation's and the weight's scales.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mlc import te
from mlc.errors import TEError


def check_scale(scale: float) -> np.float32:
    """``1 / scale`` as the float32 the kernel multiplies by; a TEError for a scale that has
    none (0, negative, NaN, inf, or so small that its inverse overflows float32)."""
    s = float(scale)
    with np.errstate(over="ignore"):
        inv = np.float32(1.0 / s) if s > 0 and math.isfinite(s) else np.float32("nan")
    if not np.isfinite(inv) or inv == 0:
        raise TEError(f"quantize: the scale must be a positive finite number whose float32 "
                      f"inverse is finite, got {scale!r}")
    return inv


def quantized_range(dtype: str, bits: int = 8) -> tuple[int, int]:
    """The values a ``bits``-bit ``dtype`` quantizer produces: int8 -128..127, uint8 0..255,
    uint8 with 7 bits 0..127."""
    if dtype == "uint8":
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def quantize(x: te.Tensor, scale: float = 1.0, zero_point: int = 0,
             dtype: str = "int8", bits: int = 8) -> te.Tensor:
    """``clip(round(x / scale) + zero_point, lo, hi)`` as ``dtype`` (int8 or uint8), ``lo``
    and ``hi`` those of a ``bits``-bit ``dtype`` (:func:`quantized_range`)."""
    lo, hi = quantized_range(dtype, bits)
    inv = te.const(float(check_scale(scale)), "float32")
    zp = min(max(int(zero_point), lo), hi)

    def q(*i: Any) -> Any:
        xf = x[i] if x.dtype == "float32" else x[i].astype("float32")
        v = te.nearbyint(xf * inv) + te.const(float(zero_point), "float32")
        v = te.min(te.max(v, te.const(float(lo), "float32")), te.const(float(hi), "float32"))
        # NaN != NaN: a NaN input becomes the zero point (max/min would pass the NaN on)
        return te.if_then_else(xf != xf, te.const(zp, dtype), v.astype(dtype))

    return te.compute(x.shape, q, name="quantize", tag="elemwise")


def dequantize(x: te.Tensor, scale: te.Tensor) -> te.Tensor:
    """``float32(x[..., j]) * scale[j]``."""
    return te.compute(x.shape, lambda *i: x[i].astype("float32") * scale[i[-1]],
                      name="dequantize", tag="broadcast")
