"""``graph.qnn.*``: builders of quantized graphs (int8 weights, uint8/int8 activations).

    s_x = graph.qnn.calibrate(x_train)                  # activation scale (max |x| / 127)
    h = graph.qnn.quantize(x, s_x)                      # uint8, zero point 128: x/s + 128
    wq, s_w = graph.qnn.quantize_weight(w)              # int8, one scale per output channel
    acc = graph.qnn.dense(h, wq)                        # int32 = sum((h - 128) * wq)
    y = graph.qnn.dequantize(acc, s_x * s_w)            # float32

Activations are int8 values ``round(x / s)`` (-127..127) stored with an offset of 128 as
uint8, the operand order ``vpdpbusd`` needs (u8 x s8); ``qnn.dense`` subtracts the
``128 * colsum(w)`` that the offset adds, so the result is exactly ``sum(round(x/s) * wq)``.

Activations that are never negative (a relu's output, pixels) need no offset and fit in
7 bits::

    h = graph.qnn.quantize(x, s_x, zero_point=0, bits=7)   # uint8 0..127: round(x/s)
    acc = graph.qnn.dense(h, wq)                           # data_bits=7, zero point 0

``qnn.dense`` reads both from the quantize that made ``h``. With 7-bit data the int8 dot
product runs on ``dp4a_u7``: on AVX2 without VNNI, ``vpmaddubsw``'s int16 pair sums cannot
saturate (``127 * 128 * 2 < 32767``), so the fast instruction is exact.
"""

from __future__ import annotations

import warnings

import numpy as np

from mlc.errors import GraphError
from mlc.graph import ops as _ops  # noqa: F401  (registers the ops)
from mlc.graph.ir import Call, Node, call, const
from mlc.graph.ops.quantize import check_quantize

ZERO_POINT = 128


def _finite(x: np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(x, np.float32)
    if not np.isfinite(a).all():
        raise GraphError(f"{what}: the values must be finite; found "
                         f"{int(np.isnan(a).sum())} NaN and {int(np.isinf(a).sum())} inf")
    return a


def calibrate(x: np.ndarray) -> float:
    """A symmetric per-tensor scale: ``max |x| / 127`` (1.0 for an all-zero tensor)."""
    m = float(np.abs(_finite(x, "qnn.calibrate")).max(initial=0.0))
    return m / 127.0 if m > 0 else 1.0


def quantize_weight(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-output-channel symmetric int8: ``(wq, scale)`` with ``w[j] ~ wq[j] * scale[j]``."""
    w = _finite(w, "qnn.quantize_weight")
    if w.ndim != 2 or w.size == 0:
        raise GraphError(f"qnn.quantize_weight takes a 2-d (units, in_features) weight with "
                         f"elements, got shape {w.shape}")
    m = np.abs(w).max(axis=1)
    scale = np.where(m > 0, m / 127.0, 1.0).astype(np.float32)
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)  # m / 127 underflowed to 0
    wq = np.clip(np.round(w / scale[:, None]), -127, 127).astype(np.int8)
    return wq, scale


def quantize(x: Node, scale: float, zero_point: int = ZERO_POINT, dtype: str = "uint8",
             bits: int = 8) -> Call:
    """``clip(round(x / scale) + zero_point)`` as uint8 (or int8 with ``dtype``), clipped to
    ``bits`` bits (``bits=7``: uint8 0..127). NaN becomes ``zero_point``."""
    check_quantize(scale, zero_point, dtype, bits)
    attrs: dict[str, object] = {"scale": float(scale), "zero_point": int(zero_point),
                                "dtype": dtype}
    if bits != 8:
        attrs["bits"] = int(bits)
    return call("qnn.quantize", x, **attrs)


def dequantize(x: Node, scale: np.ndarray | float, name: str = "") -> Call:
    """``float32(x) * scale``, ``scale`` per output channel (a scalar is repeated)."""
    s = np.asarray(scale, np.float32)
    channels = x.shape[-1] if x.shape else 0
    if s.ndim > 1 or (s.ndim == 1 and s.shape[0] != channels):
        raise GraphError(f"qnn.dequantize: the scale must be a scalar or have one value per "
                         f"channel ({channels}, the last axis of {x.shape}), got shape "
                         f"{s.shape}")
    return call("qnn.dequantize", x, const(np.broadcast_to(s, (channels,)).copy(), name=name))


def dense(x: Node, wq: np.ndarray, name: str = "wq", zero_point: int | None = None,
          data_bits: int | None = None) -> Call:
    """int32 ``(x - zero_point) @ wq.T`` for uint8 or int8 ``x``; ``wq`` (units x in, int8)
    is packed here for ``vpdpbusd`` (:func:`mlc.topi.x86.pack_weight`).

    ``zero_point`` and ``data_bits`` (7: every value of ``x`` is below 128) default to those
    of the ``qnn.quantize`` that made ``x`` (else zero point 128 for uint8, 0 for int8, and 8
    bits). ``data_bits=7`` is only taken from a 7-bit quantize: a promise nothing checks
    would be silently wrong on AVX2."""
    from mlc.topi.x86.dense_int8 import pack_weight

    made_by = x.attrs if isinstance(x, Call) and x.op.name == "qnn.quantize" else {}
    w = np.asarray(wq)
    if w.dtype != np.int8 or w.ndim != 2 or w.size == 0:
        raise GraphError(f"qnn.dense: the weight must be a 2-d int8 array (units, in) with "
                         f"elements (graph.qnn.quantize_weight makes one), got {w.dtype} "
                         f"{w.shape}")
    if x.ndim != 2 or x.shape[1] != w.shape[1]:
        raise GraphError(f"qnn.dense computes x @ wq.T for x of shape (batch, in): x has "
                         f"shape {x.shape}, wq has shape {w.shape}")
    if zero_point is None:
        zero_point = int(made_by.get("zero_point", ZERO_POINT if x.dtype == "uint8" else 0))
    bits_made = int(made_by.get("bits", 8)) if x.dtype == "uint8" else 8
    if data_bits is None:
        data_bits = bits_made
    elif data_bits <= 7 and bits_made > 7:
        raise GraphError("qnn.dense: data_bits=7 promises every value of x below 128, and only "
                         "a qnn.quantize(..., bits=7) in front of it keeps that promise; on "
                         "AVX2 without VNNI a value of 128 or more saturates the int16 pair "
                         "sums and the result is silently wrong. Quantize x with bits=7.")
    # The kernel computes sum(u * w) - comp, u = x (uint8) or x + 128 (int8 shifted for
    # vpdpbusd); comp = shift * colsum(w) makes that sum((x - zero_point) * w).
    shift = zero_point if x.dtype == "uint8" else 128 + zero_point
    comp = (shift * w.astype(np.int64).sum(axis=1)).astype(np.int32)  # wraps like the sums
    lo, hi = (0, 255) if x.dtype == "uint8" else (-128, 127)
    worst = w.shape[1] * max(abs(lo - zero_point), abs(hi - zero_point)) * 128
    if worst > np.iinfo(np.int32).max:
        warnings.warn(f"qnn.dense: with {w.shape[1]} input features the int32 accumulators "
                      f"can overflow (worst case {worst}); they wrap around, as numpy's int32 "
                      "arithmetic does", stacklevel=2)
    packed, _ = pack_weight(w)
    attrs: dict[str, object] = {"units": int(w.shape[0])}
    if data_bits <= 7:
        attrs["data_bits"] = 7
    return call("qnn.dense", x, const(packed, name=name), const(comp, name=name + "_comp"),
                **attrs)
