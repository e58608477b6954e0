"""The digits MLP quantized to int8: per-channel int8 weights, int8 activations (stored as
uint8 with zero point 128), int32 accumulation on ``vpdpbusd`` where the CPU has it.

Post-training quantization, calibrated on the training set:

* each weight row ``w[j]`` becomes ``wq[j] = round(w[j] / s_w[j])`` with
  ``s_w[j] = max |w[j]| / 127`` (per output channel);
* each layer's input ``h`` becomes ``round(h / s_h)`` with ``s_h = max |h| / 127`` measured
  on the training data (per tensor);
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
    """int8 weights ``wq`` with per-channel scales ``s_w``, biases, and the input scale of
    every layer ``s_in``."""

    wq: list[np.ndarray]
    s_w: list[np.ndarray]
    bias: list[np.ndarray]
    s_in: list[float]


def quantize_mlp(params: Params, x_calib: np.ndarray) -> QuantizedMLP:
    """Quantize ``params`` (the fp32 MLP), calibrating activation scales on ``x_calib``."""
    wq, s_w, bias, s_in = [], [], [], []
    h = np.asarray(x_calib, np.float32)
    for k, (w, b) in enumerate(params):
        s_in.append(graph.qnn.calibrate(h))
        q, s = graph.qnn.quantize_weight(w)
        wq.append(q)
        s_w.append(s)
        bias.append(np.asarray(b, np.float32))
        h = h @ w.T + b
        if k < len(params) - 1:
            h = np.maximum(h, 0)
    return QuantizedMLP(wq, s_w, bias, s_in)


def quantized_mlp_graph(q: QuantizedMLP, batch: int) -> graph.Graph:
    """quantize -> [qnn.dense -> dequantize -> bias_add -> relu -> quantize]* -> softmax."""
    x = graph.var("x", (batch, q.wq[0].shape[1]))
    h: graph.Node = graph.qnn.quantize(x, q.s_in[0])
    y: graph.Node = x
    for k, (wq, s_w, b) in enumerate(zip(q.wq, q.s_w, q.bias)):
        acc = graph.qnn.dense(h, wq, name=f"wq{k}")
        y = graph.qnn.dequantize(acc, q.s_in[k] * s_w, name=f"s{k}")
        y = graph.nn.bias_add(y, graph.const(b, name=f"b{k}"), axis=1)
        if k < len(q.wq) - 1:
            h = graph.qnn.quantize(graph.nn.relu(y), q.s_in[k + 1])
    return graph.Graph([x], [graph.nn.softmax(y)])


def quantized_forward(q: QuantizedMLP, x: np.ndarray) -> np.ndarray:
    """The quantized inference in numpy (the same integer arithmetic); returns logits."""
    h = ref_quantize(np.asarray(x, np.float32), q.s_in[0], 0, "int8").astype(np.int32)
    y = np.zeros(0, np.float32)
    for k, (wq, s_w, b) in enumerate(zip(q.wq, q.s_w, q.bias)):
        acc = h @ wq.astype(np.int32).T
        y = acc.astype(np.float32) * (np.float32(q.s_in[k]) * s_w) + b
        if k < len(q.wq) - 1:
            h = ref_quantize(np.maximum(y, 0), q.s_in[k + 1], 0, "int8").astype(np.int32)
    return y
