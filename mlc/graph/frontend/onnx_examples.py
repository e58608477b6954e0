"""Small ONNX models written with ``onnx.helper`` (no downloads): the work a student brings,
for tests and benchmarks that compare mlc with ONNX Runtime (issue 30).

    mlp(spelling, batch)      784-256-128-10, each layer as ``Gemm`` (torch's export of Linear)
                              or ``MatMul`` + ``Add`` (the weight stored (in, out))
    convnet(batch)            two conv3x3 + BatchNormalization + Relu + MaxPool stages, then a
                              Gemm: 3x32x32 -> 16x16x16 -> 32x8x8 -> 10
    transformer(seq, width, heads)   one encoder block: LayerNormalization, Q/K/V MatMul + Add,
                              4-d attention (MatMul, scale, Softmax, MatMul), output projection,
                              residual, LayerNormalization, MLP with Gelu, residual

Weights are random, from ``seed``; each function returns the ModelProto.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlc.errors import ArgumentError


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("the example ONNX models need the onnx package (pip install onnx)"
                          ) from e
    return onnx


class _Builder:
    def __init__(self, seed: int) -> None:
        self.onnx = _onnx()
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0

    def weight(self, name: str, shape: tuple[int, ...], scale: float) -> str:
        a = (self.rng.standard_normal(shape) * scale).astype("float32")
        return self.const(name, a)

    def const(self, name: str, a: np.ndarray) -> str:
        self.inits.append(self.onnx.numpy_helper.from_array(np.asarray(a), name))
        return name

    def node(self, op: str, inputs: list[str], **attrs: Any) -> str:
        self.count += 1
        out = f"{op.lower()}_{self.count}"
        self.nodes.append(self.onnx.helper.make_node(op, inputs, [out], **attrs))
        return out

    def model(self, x_shape: tuple[int, ...], out: str, out_shape: tuple[int, ...],
              opset: int) -> Any:
        h, tp = self.onnx.helper, self.onnx.TensorProto
        g = h.make_graph(self.nodes, "example", [h.make_tensor_value_info("x", tp.FLOAT,
                                                                          list(x_shape))],
                         [h.make_tensor_value_info(out, tp.FLOAT, list(out_shape))],
                         self.inits)
        return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def mlp(spelling: str = "gemm", batch: int = 64, sizes: tuple[int, ...] = (784, 256, 128, 10),
        seed: int = 0) -> Any:
    """``spelling`` "gemm" (Gemm, transB=1) or "matmul" (MatMul + Add); ReLU between layers."""
    if spelling not in ("gemm", "matmul"):
        raise ArgumentError(f"spelling must be 'gemm' or 'matmul', got {spelling!r}")
    b = _Builder(seed)
    h = "x"
    for k, (i, o) in enumerate(zip(sizes, sizes[1:])):
        bias = b.weight(f"b{k}", (o,), 0.1)
        if spelling == "gemm":
            w = b.weight(f"w{k}", (o, i), 1.0 / np.sqrt(i))
            h = b.node("Gemm", [h, w, bias], transB=1)
        else:
            w = b.weight(f"w{k}", (i, o), 1.0 / np.sqrt(i))
            h = b.node("Add", [b.node("MatMul", [h, w]), bias])
        if k < len(sizes) - 2:
            h = b.node("Relu", [h])
    return b.model((batch, sizes[0]), h, (batch, sizes[-1]), 13)


def convnet(batch: int = 1, channels: tuple[int, int] = (16, 32), classes: int = 10,
            size: int = 32, seed: int = 0) -> Any:
    """Two conv3x3 (pad 1) + BatchNormalization + Relu + MaxPool 2x2 stages, Flatten, Gemm."""
    b = _Builder(seed)
    h, cin = "x", 3
    for s, cout in enumerate(channels):
        w = b.weight(f"conv{s}_w", (cout, cin, 3, 3), 1.0 / np.sqrt(cin * 9))
        cb = b.weight(f"conv{s}_b", (cout,), 0.1)
        h = b.node("Conv", [h, w, cb], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        gamma = b.const(f"bn{s}_g", (1.0 + 0.1 * b.rng.standard_normal(cout)).astype("f4"))
        beta = b.weight(f"bn{s}_b", (cout,), 0.1)
        mean = b.weight(f"bn{s}_m", (cout,), 0.1)
        var = b.const(f"bn{s}_v", (0.5 + b.rng.random(cout)).astype("f4"))
        h = b.node("BatchNormalization", [h, gamma, beta, mean, var], epsilon=1e-5)
        h = b.node("Relu", [h])
        h = b.node("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])
        cin = cout
    h = b.node("Flatten", [h], axis=1)
    feat = cin * (size // 4) ** 2
    w = b.weight("fc_w", (classes, feat), 1.0 / np.sqrt(feat))
    h = b.node("Gemm", [h, w, b.weight("fc_b", (classes,), 0.1)], transB=1)
    return b.model((batch, 3, size, size), h, (batch, classes), 13)


def transformer(seq: int = 128, width: int = 256, heads: int = 4, mlp_ratio: int = 4,
                batch: int = 1, seed: int = 0) -> Any:
    """A pre-norm encoder block on x of shape (batch, seq, width), opset 20 (Gelu)."""
    if width % heads:
        raise ArgumentError(f"width {width} is not a multiple of heads {heads}")
    b = _Builder(seed)
    dh = width // heads
    s = 1.0 / np.sqrt(width)

    def linear(h: str, name: str, i: int, o: int) -> str:
        w = b.weight(f"{name}_w", (i, o), 1.0 / np.sqrt(i))
        return b.node("Add", [b.node("MatMul", [h, w]), b.weight(f"{name}_b", (o,), 0.02)])

    def norm(h: str, name: str) -> str:
        g = b.const(f"{name}_g", (1.0 + 0.1 * b.rng.standard_normal(width)).astype("f4"))
        return b.node("LayerNormalization", [h, g, b.weight(f"{name}_b", (width,), 0.1)],
                      axis=-1, epsilon=1e-5)

    heads_shape = b.const("heads_shape", np.array([batch, seq, heads, dh], np.int64))
    flat_shape = b.const("flat_shape", np.array([batch, seq, width], np.int64))
    ln1 = norm("x", "ln1")
    q, k, v = (b.node("Reshape", [linear(ln1, n, width, width), heads_shape])
               for n in ("q", "k", "v"))
    q = b.node("Transpose", [q], perm=[0, 2, 1, 3])          # (b, h, seq, dh)
    k = b.node("Transpose", [k], perm=[0, 2, 3, 1])          # (b, h, dh, seq)
    v = b.node("Transpose", [v], perm=[0, 2, 1, 3])
    scale = b.const("scale", np.array(1.0 / np.sqrt(dh), np.float32))
    scores = b.node("Mul", [b.node("MatMul", [q, k]), scale])
    p = b.node("Softmax", [scores], axis=-1)
    o = b.node("Transpose", [b.node("MatMul", [p, v])], perm=[0, 2, 1, 3])
    o = linear(b.node("Reshape", [o, flat_shape]), "proj", width, width)
    x1 = b.node("Add", ["x", o])
    h = linear(norm(x1, "ln2"), "fc1", width, width * mlp_ratio)
    h = linear(b.node("Gelu", [h]), "fc2", width * mlp_ratio, width)
    out = b.node("Add", [x1, h])
    del s
    return b.model((batch, seq, width), out, (batch, seq, width), 20)
