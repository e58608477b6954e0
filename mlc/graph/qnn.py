"""``graph.qnn.*``: builders of quantized graphs (int8 weights, uint8/int8 activations).

    s_x = graph.qnn.calibrate(x_train)                  # activation scale (max |x| / 127)
    h = graph.qnn.quantize(x, s_x)                      # uint8, zero point 128: x/s + 128
    wq, s_w = graph.qnn.quantize_weight(w)              # int8, one scale per output channel
    acc = graph.qnn.dense(h, wq)                        # int32 = sum((h - 128) * wq)
    y = graph.qnn.dequantize(acc, s_x * s_w)            # float32

Activations are int8 values ``round(x / s)`` (-127..127) stored with an offset of 128 as
uint8, the operand order ``vpdpbusd`` needs (u8 x s8); ``qnn.dense`` subtracts the
``128 * colsum(w)`` that the offset adds, so the result is exactly ``sum(round(x/s) * wq)``.
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


def quantize(x: Node, scale: float, zero_point: int = ZERO_POINT, dtype: str = "uint8") -> Call:
    """``clip(round(x / scale) + zero_point)`` as uint8 (or int8 with ``dtype``)."""
    return call("qnn.quantize", x, scale=float(scale), zero_point=int(zero_point), dtype=dtype)


def dequantize(x: Node, scale: np.ndarray | float, name: str = "") -> Call:
    """``float32(x) * scale``, ``scale`` per output channel (a scalar is repeated)."""
    s = np.broadcast_to(np.asarray(scale, np.float32), (x.shape[-1],)).copy()
    return call("qnn.dequantize", x, const(s, name=name))


def dense(x: Node, wq: np.ndarray, name: str = "wq") -> Call:
    """int32 ``(x - 128) @ wq.T`` for uint8 ``x`` (zero point 128) or ``x @ wq.T`` for int8
    ``x``; ``wq`` (units x in, int8) is packed here for ``vpdpbusd``
    (:func:`mlc.topi.x86.pack_weight`)."""
    from mlc.topi.x86.dense_int8 import pack_weight

    packed, comp = pack_weight(np.asarray(wq))
    return call("qnn.dense", x, const(packed, name=name), const(comp, name=name + "_comp"),
                units=int(wq.shape[0]))
