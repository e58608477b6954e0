"""Quantize and dequantize as te computations (the graph ops ``qnn.quantize`` /
``qnn.dequantize``); elementwise, so a fused group inlines them into its kernel's epilogue.

* ``quantize(x, scale, zero_point, dtype, bits)``: ``clip(nearbyint(x / scale) +
  zero_point)`` into ``int8`` (-128..127) or ``uint8`` (0..255; 0..127 with ``bits=7``);
  ``nearbyint`` rounds ties to even, as ``np.round`` does, so the compiled kernel and numpy
  agree bit for bit.
* ``dequantize(x, scale)``: ``float32(x) * scale[j]``, one scale per output channel (the
  last axis), the product of the activation's and the weight's scales.
"""

from __future__ import annotations

from typing import Any

from mlc import te


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
    inv = te.const(1.0 / float(scale), x.dtype)

    def q(*i: Any) -> Any:
        v = te.nearbyint(x[i] * inv) + te.const(float(zero_point), x.dtype)
        v = te.min(te.max(v, te.const(float(lo), x.dtype)), te.const(float(hi), x.dtype))
        return v.astype(dtype)

    return te.compute(x.shape, q, name="quantize", tag="elemwise")


def dequantize(x: te.Tensor, scale: te.Tensor) -> te.Tensor:
    """``float32(x[..., j]) * scale[j]``."""
    return te.compute(x.shape, lambda *i: x[i].astype("float32") * scale[i[-1]],
                      name="dequantize", tag="broadcast")
