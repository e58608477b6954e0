"""graph.build: compiled graphs compute what numpy computes (group by group too)."""

from __future__ import annotations

import numpy as np
import pytest

from mlc import graph
from mlc.errors import GraphError

RNG = np.random.default_rng(3)


def arr(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype("float32")


def c(*shape: int, scale: float = 0.3) -> graph.Constant:
    return graph.const(arr(*shape, scale=scale))


def check(g: graph.Graph, level: int = 2, **inputs: np.ndarray) -> graph.GraphModule:
    ref = graph.evaluate(g, **inputs)
    mod = graph.build(graph.optimize(g, level=level), target="llvm")
    if all(k.native for k in mod.kernels):
        assert mod.num_native_calls == 1 and mod.module.entry_name == "graph"
    got = mod(**inputs)
    for r, o in zip(ref, got):
        np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-4)
    mod.debug_run(**inputs)
    return mod


@pytest.mark.parametrize("batch", [1, 7])
def test_mlp(batch: int) -> None:
    x = graph.var("x", (batch, 64))
    h = graph.nn.relu(graph.nn.dense(x, c(32, 64)) + c(32))
    y = graph.nn.softmax(graph.nn.bias_add(graph.nn.dense(h, c(10, 32)), c(10)))
    mod = check(graph.Graph([x], [y]), x=arr(batch, 64))
    assert len(mod.kernels) == 3 and all(k.native for k in mod.kernels)


def test_convnet_fused_and_unfused() -> None:
    x = graph.var("x", (2, 1, 8, 8))
    y = graph.nn.conv2d(x, c(4, 1, 3, 3), padding=1)
    y = graph.nn.batch_norm(y, c(4), c(4), c(4), graph.const(np.abs(arr(4)) + 1))
    y = graph.nn.max_pool2d(graph.nn.relu(y), 2)
    y = graph.nn.conv2d(y, c(6, 4, 3, 3), padding=(1, 0, 1, 0), strides=(1, 2))
    y = graph.nn.global_avg_pool2d(graph.nn.relu(y))
    y = graph.nn.dense(graph.nn.batch_flatten(y), c(3, 6))
    g = graph.Graph([x], [y])
    xv = arr(2, 1, 8, 8)
    fused = check(g, level=2, x=xv)
    unfused = check(g, level=0, x=xv)
    assert len(fused.kernels) < len(unfused.kernels)


def test_depthwise_and_pools() -> None:
    x = graph.var("x", (1, 3, 7, 7))
    y = graph.nn.conv2d(x, c(3, 1, 3, 3), groups=3, dilation=2, padding=2)
    a = graph.nn.avg_pool2d(y, 3, strides=2, padding=1)
    b = graph.nn.max_pool2d(y, 3, strides=2, padding=1)
    check(graph.Graph([x], [a * b]), x=arr(1, 3, 7, 7))


def test_shape_ops_reductions_and_opaque() -> None:
    x = graph.var("x", (3, 4, 5))
    t = graph.transpose(graph.reshape(x, (12, 5)), (1, 0))           # (5, 12)
    s = graph.sum(graph.exp(t), axis=1, keepdims=True)               # (5, 1)
    m = graph.max(graph.sort(t, axis=1), axis=0)                     # (12,)
    cat = graph.concatenate([graph.pad(t, ((0, 0), (1, 0))), s], axis=1)   # (5, 14)
    ln = graph.nn.layer_norm(cat, c(14), c(14))
    check(graph.Graph([x], [ln, m, graph.nn.log_softmax(t)]), x=arr(3, 4, 5))


def test_matmul_batch_matmul_gelu() -> None:
    a = graph.var("a", (2, 3, 8))
    b = graph.var("b", (2, 5, 8))
    y = graph.nn.gelu(graph.nn.batch_matmul(a, b))
    z = graph.nn.matmul(graph.reshape(y, (6, 5)), c(5, 4))
    check(graph.Graph([a, b], [z]), a=arr(2, 3, 8), b=arr(2, 5, 8))


def test_executor_checks_inputs() -> None:
    x = graph.var("x", (2, 3))
    mod = graph.build(graph.optimize(graph.Graph([x], [graph.nn.relu(x)])))
    with pytest.raises(GraphError, match=r"input 'x' must have shape \(2, 3\), got \(3, 2\)"):
        mod.set_input(x=arr(3, 2))
    assert "1 kernels" in mod.summary()
