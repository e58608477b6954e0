"""The digits MLP quantized to int8: per-channel int8 weights, 8-bit activations, int32
accumulation on ``vpdpbusd`` where the CPU has it.

Post-training quantization, calibrated on the training set:

* each weight row ``w[j]`` becomes ``wq[j] = round(w[j] / s_w[j])`` with
  ``s_w[j] = max |w[j]| / 127`` (per output channel);
* each layer's input ``h`` becomes ``round(h / s_h)`` with ``s_h = max |h| / 127`` measured
  on the training data (per tensor). An input that is never negative (the pixels, a relu's
  output) is 0..127: stored as uint8 with zero point 0 and **7 bits** (``bits=7``), which
  lets the int8 dot product run on AVX2's ``vpmaddubsw`` exactly; a signed input is
  -127..127, stored as uint8 with zero point 128;
* a layer computes ``acc = sum(hq * wq)`` in int32, then ``acc * (s_h * s_w[j]) + b[j]``,
  relu, and quantizes for the next layer, all in one fused kernel.

:func:`quantized_mlp_graph` writes it with :mod:`mlc.graph.qnn`; :func:`quantize_mlp`
computes the scales; :func:`quantized_forward` is the same arithmetic in numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlc import graph
from mlc.graph.ops.quantize import ref_quantize

Params = list[tuple[np.ndarray, np.ndarray]]


@dataclass
class QuantizedMLP:
    """int8 weights ``wq`` with per-channel scales ``s_w``, biases, the input scale of every
    layer ``s_in``, and whether that input is non-negative (``unsigned``: 7-bit, 0..127)."""

    wq: list[np.ndarray]
    s_w: list[np.ndarray]
    bias: list[np.ndarray]
    s_in: list[float]
    unsigned: list[bool]


def quantize_mlp(params: Params, x_calib: np.ndarray) -> QuantizedMLP:
    """Quantize ``params`` (the fp32 MLP), calibrating activation scales on ``x_calib``. The
    first layer's input is taken as non-negative when the calibration data is (at inference
    a negative pixel would be clipped to 0, as a value above the calibrated maximum is
    clipped to 127); the hidden layers' inputs are relu outputs."""
    wq, s_w, bias, s_in, unsigned = [], [], [], [], []
    h = np.asarray(x_calib, np.float32)
    for k, (w, b) in enumerate(params):
        s_in.append(graph.qnn.calibrate(h))
        unsigned.append(k > 0 or float(h.min(initial=0.0)) >= 0.0)
        q, s = graph.qnn.quantize_weight(w)
        wq.append(q)
        s_w.append(s)
        bias.append(np.asarray(b, np.float32))
        h = h @ w.T + b
        if k < len(params) - 1:
            h = np.maximum(h, 0)
    return QuantizedMLP(wq, s_w, bias, s_in, unsigned)


def _quantize(q: QuantizedMLP, k: int, h: graph.Node, seven_bits: bool) -> graph.Node:
    if seven_bits and q.unsigned[k]:
        return graph.qnn.quantize(h, q.s_in[k], zero_point=0, bits=7)
    return graph.qnn.quantize(h, q.s_in[k])


def quantized_mlp_graph(q: QuantizedMLP, batch: int, seven_bits: bool = True) -> graph.Graph:
    """quantize -> [qnn.dense -> dequantize -> bias_add -> relu -> quantize]* -> softmax.
    ``seven_bits=False`` stores every activation with zero point 128 (8-bit ``dp4a``)."""
    x = graph.var("x", (batch, q.wq[0].shape[1]))
    h = _quantize(q, 0, x, seven_bits)
    y: graph.Node = x
    for k, (wq, s_w, b) in enumerate(zip(q.wq, q.s_w, q.bias)):
        acc = graph.qnn.dense(h, wq, name=f"wq{k}")
        y = graph.qnn.dequantize(acc, q.s_in[k] * s_w, name=f"s{k}")
        y = graph.nn.bias_add(y, graph.const(b, name=f"b{k}"), axis=1)
        if k < len(q.wq) - 1:
            h = _quantize(q, k + 1, graph.nn.relu(y), seven_bits)
    return graph.Graph([x], [graph.nn.softmax(y)])


def _ref_quantize(q: QuantizedMLP, k: int, h: np.ndarray) -> np.ndarray:
    if q.unsigned[k]:
        return ref_quantize(h, q.s_in[k], 0, "uint8", bits=7).astype(np.int32)
    return ref_quantize(h, q.s_in[k], 0, "int8").astype(np.int32)


def quantized_forward(q: QuantizedMLP, x: np.ndarray) -> np.ndarray:
    """The quantized inference in numpy (the same integer arithmetic); returns logits."""
    h = _ref_quantize(q, 0, np.asarray(x, np.float32))
    y = np.zeros(0, np.float32)
    for k, (wq, s_w, b) in enumerate(zip(q.wq, q.s_w, q.bias)):
        acc = h @ wq.astype(np.int32).T
        y = acc.astype(np.float32) * (np.float32(q.s_in[k]) * s_w) + b
        if k < len(q.wq) - 1:
            h = _ref_quantize(q, k + 1, np.maximum(y, 0))
    return y
