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

import numpy as np

from mlc.graph import ops as _ops  # noqa: F401  (registers the ops)
from mlc.graph.ir import Call, Node, call, const

ZERO_POINT = 128


def calibrate(x: np.ndarray) -> float:
    """A symmetric per-tensor scale: ``max |x| / 127`` (1.0 for an all-zero tensor)."""
    m = float(np.abs(np.asarray(x, np.float32)).max(initial=0.0))
    return m / 127.0 if m > 0 else 1.0


def quantize_weight(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-output-channel symmetric int8: ``(wq, scale)`` with ``w[j] ~ wq[j] * scale[j]``."""
    w = np.asarray(w, np.float32)
    m = np.abs(w).max(axis=1)
    scale = np.where(m > 0, m / 127.0, 1.0).astype(np.float32)
    wq = np.clip(np.round(w / scale[:, None]), -127, 127).astype(np.int8)
    return wq, scale


def quantize(x: Node, scale: float, zero_point: int = ZERO_POINT, dtype: str = "uint8",
             bits: int = 8) -> Call:
    """``clip(round(x / scale) + zero_point)`` as uint8 (or int8 with ``dtype``), clipped to
    ``bits`` bits (``bits=7``: uint8 0..127)."""
    attrs: dict[str, object] = {"scale": float(scale), "zero_point": int(zero_point),
                                "dtype": dtype}
    if bits != 8:
        attrs["bits"] = int(bits)
    return call("qnn.quantize", x, **attrs)


def dequantize(x: Node, scale: np.ndarray | float, name: str = "") -> Call:
    """``float32(x) * scale``, ``scale`` per output channel (a scalar is repeated)."""
    s = np.broadcast_to(np.asarray(scale, np.float32), (x.shape[-1],)).copy()
    return call("qnn.dequantize", x, const(s, name=name))


def dense(x: Node, wq: np.ndarray, name: str = "wq", zero_point: int | None = None,
          data_bits: int | None = None) -> Call:
    """int32 ``(x - zero_point) @ wq.T`` for uint8 ``x`` or ``x @ wq.T`` for int8 ``x``;
    ``wq`` (units x in, int8) is packed here for ``vpdpbusd``
    (:func:`mlc.topi.x86.pack_weight`).

    ``zero_point`` and ``data_bits`` (7: every value of ``x`` is below 128) default to those
    of the ``qnn.quantize`` that made ``x`` (zero point 128 and 8 bits for anything else)."""
    from mlc.topi.x86.dense_int8 import pack_weight

    made_by = x.attrs if isinstance(x, Call) and x.op.name == "qnn.quantize" else {}
    if zero_point is None:
        zero_point = int(made_by.get("zero_point", ZERO_POINT))
    if data_bits is None:
        data_bits = int(made_by.get("bits", 8)) if x.dtype == "uint8" else 8
    w = np.asarray(wq)
    packed, _ = pack_weight(w)
    shift = zero_point if x.dtype == "uint8" else 128  # int8 data is shifted to uint8 (+128)
    comp = (shift * w.astype(np.int32).sum(axis=1)).astype(np.int32)
    attrs: dict[str, object] = {"units": int(w.shape[0])}
    if data_bits <= 7:
        attrs["data_bits"] = 7
    return call("qnn.dense", x, const(packed, name=name), const(comp, name=name + "_comp"),
                **attrs)
