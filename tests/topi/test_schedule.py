"""topi.default_schedule: scheduled and compiled operators still compute what numpy computes,
on shapes that do not divide the tile sizes; and the schedule really tiles/vectorizes."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, topi
from mlc.graph.op import get_op

RNG = np.random.default_rng(4)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def build_run(tensors, arrays):  # type: ignore[no-untyped-def]
    sch = topi.default_schedule(tensors)
    f = mlc.build(sch.mod, target="llvm")
    out = np.zeros([s.value for s in tensors[-1].shape], "float32")
    f(*arrays, out)
    return out, sch


@pytest.mark.parametrize("m,k,n", [(1, 64, 10), (7, 13, 33), (64, 64, 128)])
def test_dense_bias_relu(m, k, n):  # type: ignore[no-untyped-def]
    x, w, b = te.placeholder((m, k), name="x"), te.placeholder((n, k), name="w"), \
        te.placeholder((n,), name="b")
    y = topi.nn.relu(topi.nn.bias_add(topi.nn.dense(x, w), b))
    xa, wa, ba = rand(m, k), rand(n, k), rand(n)
    out, sch = build_run([x, w, b, y], [xa, wa, ba])
    np.testing.assert_allclose(out, np.maximum(xa @ wa.T + ba, 0), rtol=1e-4, atol=1e-4)
    text = str(sch.mod)
    assert "vectorized(" in text and "bias_add" not in text   # inlined, vectorized


def test_plain_dense_decomposes_reduction() -> None:
    x, w = te.placeholder((8, 32), name="x"), te.placeholder((32, 32), name="w")
    y = topi.nn.dense(x, w)
    xa, wa = rand(8, 32), rand(32, 32)
    out, sch = build_run([x, w, y], [xa, wa])
    np.testing.assert_allclose(out, xa @ wa.T, rtol=1e-4, atol=1e-4)
    assert 'block("dense_init")' in str(sch.mod)


def test_conv2d_relu() -> None:
    x, w = te.placeholder((1, 3, 9, 7), name="x"), te.placeholder((5, 3, 3, 3), name="w")
    y = topi.nn.relu(topi.nn.conv2d(x, w, strides=1, padding=1))
    xa, wa = rand(1, 3, 9, 7), rand(5, 3, 3, 3)
    out, _ = build_run([x, w, y], [xa, wa])
    ref = get_op("nn.conv2d").ref(xa, wa, strides=(1, 1), padding=(1, 1, 1, 1),
                                  dilation=(1, 1), groups=1)
    np.testing.assert_allclose(out, np.maximum(ref, 0), rtol=1e-4, atol=1e-4)


def test_softmax_and_pool() -> None:
    x = te.placeholder((3, 37), name="x")
    out, _ = build_run([x, topi.nn.softmax(x)], [xa := rand(3, 37)])
    e = np.exp(xa - xa.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    p = te.placeholder((1, 2, 7, 7), name="p")
    out, _ = build_run([p, topi.nn.max_pool2d(p, 3, 2, 1)], [pa := rand(1, 2, 7, 7)])
    ref = get_op("nn.max_pool2d").ref(pa, pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))
    np.testing.assert_allclose(out, ref)
