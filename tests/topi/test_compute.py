"""Every topi operator computes what numpy computes (through mlc.testing's reference
evaluator of te programs), including awkward shapes and batch 1."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mlc import te, testing, topi
from mlc.graph.op import get_op

RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def run(fn, arrays, **attrs):  # type: ignore[no-untyped-def]
    phs = [te.placeholder(a.shape, str(a.dtype), name=f"in{i}") for i, a in enumerate(arrays)]
    out = fn(*phs, **attrs)
    res = testing.evaluate([out], {p: a for p, a in zip(phs, arrays)})
    return res[out.name]


def close(a: np.ndarray, b: np.ndarray, tol: float = 1e-4) -> None:
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("name,fn", [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
    ("divide", np.divide), ("maximum", np.maximum), ("minimum", np.minimum)])
@pytest.mark.parametrize("sa,sb", [((3, 5), (3, 5)), ((4, 3), (3,)), ((4, 1), (1, 3)),
                                   ((2, 1, 5), (3, 1)), ((1,), (7, 1))])
def test_broadcast_binary(name, fn, sa, sb):  # type: ignore[no-untyped-def]
    a, b = rand(*sa), rand(*sb) + (3.0 if name == "divide" else 0.0)
    close(run(getattr(topi, name), [a, b]), fn(a, b))


def test_binary_with_scalar() -> None:
    a = rand(3, 4)
    ph = te.placeholder((3, 4), name="a")
    out = topi.multiply(ph, 2.5)
    close(testing.evaluate([out], {ph: a})[out.name], a * 2.5)


@pytest.mark.parametrize("name,fn", [
    ("exp", np.exp), ("tanh", np.tanh), ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("negative", np.negative), ("abs", np.abs), ("relu", lambda x: np.maximum(x, 0))])
def test_unary(name, fn):  # type: ignore[no-untyped-def]
    a = rand(2, 3, 5)
    close(run(getattr(topi, name), [a]), fn(a))


def test_gelu() -> None:
    a = rand(4, 7)
    c = math.sqrt(2 / math.pi)
    close(run(topi.nn.gelu, [a]), 0.5 * a * (1 + np.tanh(c * (a + 0.044715 * a ** 3))))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_reductions(name, axis, keepdims):  # type: ignore[no-untyped-def]
    a = rand(3, 5, 7)
    expected = getattr(np, name)(a, axis=axis, keepdims=keepdims)
    close(run(getattr(topi, name), [a], axis=axis, keepdims=keepdims), expected)


@pytest.mark.parametrize("m,k,n", [(1, 17, 10), (64, 64, 128), (5, 3, 33)])
def test_dense_matmul(m, k, n):  # type: ignore[no-untyped-def]
    x, w = rand(m, k), rand(n, k)
    close(run(topi.nn.dense, [x, w]), x @ w.T)
    close(run(topi.nn.matmul, [x, w.T.copy()]), x @ w.T)


@pytest.mark.parametrize("bn", [1, 5, 10])
def test_dense_pack(bn):  # type: ignore[no-untyped-def]
    x, w = rand(3, 7), rand(10, 7)
    wp = run(topi.nn.pack_weight, [w], bn=bn)
    assert wp.shape == (10 // bn, 7, bn)
    close(run(topi.nn.dense_pack, [x, wp]), x @ w.T)


@pytest.mark.parametrize("transpose_b,bb", [(True, 2), (False, 2), (True, 1)])
def test_batch_matmul(transpose_b, bb):  # type: ignore[no-untyped-def]
    a = rand(2, 3, 4)
    b = rand(bb, 5, 4) if transpose_b else rand(bb, 4, 5)
    expected = np.matmul(a, b.transpose(0, 2, 1) if transpose_b else b)
    close(run(topi.nn.batch_matmul, [a, b], transpose_b=transpose_b), expected)


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_log_softmax(axis):  # type: ignore[no-untyped-def]
    a = rand(3, 6) * 4
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    close(run(topi.nn.softmax, [a], axis=axis), e / e.sum(axis=axis, keepdims=True))
    close(run(topi.nn.log_softmax, [a], axis=axis),
          np.log(e / e.sum(axis=axis, keepdims=True)))


def test_bias_add_batch_norm_layer_norm() -> None:
    x, b = rand(2, 3, 4, 4), rand(3)
    close(run(topi.nn.bias_add, [x, b], axis=1), x + b[:, None, None])
    g, be, mu, var = rand(3), rand(3), rand(3), np.abs(rand(3)) + 0.5
    ref = get_op("nn.batch_norm").ref(x, g, be, mu, var, axis=1, epsilon=1e-5)
    close(run(topi.nn.batch_norm, [x, g, be, mu, var], axis=1, epsilon=1e-5), ref)
    y, g2, b2 = rand(4, 9), rand(9), rand(9)
    mean = y.mean(-1, keepdims=True)
    std = np.sqrt(y.var(-1, keepdims=True) + 1e-5)
    close(run(topi.nn.layer_norm, [y, g2, b2], axis=-1, epsilon=1e-5), (y - mean) / std * g2 + b2)


@pytest.mark.parametrize("c,o,k,stride,pad,dil,groups", [
    (3, 4, 3, 1, 1, 1, 1),       # same padding
    (2, 5, 3, 2, 0, 1, 1),       # strided, odd sizes
    (4, 4, 3, 1, (1, 0, 2, 1), 2, 4),  # depthwise, dilated, asymmetric padding
    (4, 6, 1, 1, 0, 1, 2),       # grouped 1x1
])
def test_conv2d(c, o, k, stride, pad, dil, groups):  # type: ignore[no-untyped-def]
    x, w = rand(1, c, 7, 6), rand(o, c // groups, k, k)
    attrs = dict(strides=stride, padding=pad, dilation=dil, groups=groups)
    got = run(topi.nn.conv2d, [x, w], **attrs)
    p = pad if not isinstance(pad, int) else (pad,) * 4
    ref = get_op("nn.conv2d").ref(x, w, strides=(stride, stride), padding=p,
                                  dilation=(dil, dil), groups=groups)
    close(got, ref)


def test_conv2d_direct_numpy() -> None:
    """The conv2d reference itself against a plain loop (so the graph's ref is trusted)."""
    x, w = rand(1, 2, 5, 5), rand(3, 2, 3, 3)
    ref = get_op("nn.conv2d").ref(x, w, strides=(1, 1), padding=(0, 0, 0, 0),
                                  dilation=(1, 1), groups=1)
    loop = np.zeros((1, 3, 3, 3), np.float32)
    for o in range(3):
        for p in range(3):
            for q in range(3):
                loop[0, o, p, q] = (x[0, :, p:p + 3, q:q + 3] * w[o]).sum()
    close(ref, loop)


@pytest.mark.parametrize("size,stride,pad", [(2, 2, 0), (3, 2, 1), (3, 1, (0, 1, 1, 0))])
def test_pools(size, stride, pad):  # type: ignore[no-untyped-def]
    x = rand(2, 3, 7, 6)
    p = pad if not isinstance(pad, int) else (pad,) * 4
    attrs = dict(pool_size=(size, size), strides=(stride, stride), padding=p)
    close(run(topi.nn.max_pool2d, [x], **attrs), get_op("nn.max_pool2d").ref(x, **attrs))
    for cip in (False, True):
        close(run(topi.nn.avg_pool2d, [x], count_include_pad=cip, **attrs),
              get_op("nn.avg_pool2d").ref(x, count_include_pad=cip, **attrs))
    close(run(topi.nn.global_avg_pool2d, [x]), x.mean(axis=(2, 3), keepdims=True))


def test_shape_ops() -> None:
    a = rand(2, 3, 4)
    close(run(topi.reshape, [a], newshape=(4, -1)), a.reshape(4, 6))
    close(run(topi.transpose, [a], axes=(2, 0, 1)), a.transpose(2, 0, 1))
    close(run(topi.transpose, [a]), a.T)
    close(run(topi.flatten, [a]), a.reshape(2, 12))
    close(run(topi.pad, [a], pad_width=((0, 1), (2, 0), (1, 1)), pad_value=-1.0),
          np.pad(a, ((0, 1), (2, 0), (1, 1)), constant_values=-1.0))
    b, c = rand(2, 1, 4), rand(2, 2, 4)
    close(run(lambda *t: topi.concatenate(*t, axis=1), [a, b, c]),
          np.concatenate([a, b, c], axis=1))
