"""graph.qnn: quantize / dequantize / qnn.dense, fused per layer, exact against numpy (8-bit
activations with zero point 128, 7-bit ones with zero point 0); the quantized digits MLP
within one point of the fp32 one."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mlc import graph
from mlc.graph.ops.quantize import ref_quantize


def _build(g: graph.Graph) -> graph.GraphModule:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the portable-dp4a notice on CPUs without VNNI
        return graph.build(graph.optimize(g), target="llvm")


def test_quantize_matches_numpy_with_ties_and_clipping() -> None:
    x = graph.var("x", (4, 20))
    g = graph.Graph([x], [graph.qnn.quantize(x, 0.5, zero_point=128)])
    v = np.linspace(-80, 80, 80, dtype=np.float32).reshape(4, 20)
    v[0, :4] = [0.25, 0.75, -0.25, 1.25]  # ties at scale 0.5: round half to even
    out = _build(g)(x=v)[0]
    np.testing.assert_array_equal(out, ref_quantize(v, 0.5, 128, "uint8"))
    assert out.dtype == np.uint8 and out.min() == 0 and out.max() == 255


@pytest.mark.parametrize("batch,units,inp", [(5, 10, 13), (8, 32, 64), (3, 17, 4)])
def test_qnn_dense_layer_is_one_fused_kernel_and_exact(batch: int, units: int, inp: int) -> None:
    rng = np.random.default_rng(batch + units)
    w = rng.integers(-127, 128, (units, inp)).astype(np.int8)
    s = rng.uniform(0.01, 0.1, units).astype(np.float32)
    b = rng.standard_normal(units).astype(np.float32)
    x = graph.var("x", (batch, inp), "uint8")
    y = graph.nn.relu(graph.nn.bias_add(graph.qnn.dequantize(graph.qnn.dense(x, w), s),
                                        graph.const(b)))
    out = graph.qnn.quantize(y, 0.05)
    g = graph.optimize(graph.Graph([x], [out]))
    assert len(g.groups or []) == 1, "dense, dequantize, bias, relu, quantize: one kernel"
    xv = rng.integers(0, 256, (batch, inp)).astype(np.uint8)
    xv[0] = 255
    got = _build(graph.Graph([x], [out]))(x=xv)[0]
    acc = (xv.astype(np.int32) - 128) @ w.astype(np.int32).T
    want = ref_quantize(np.maximum(acc.astype(np.float32) * s + b, 0), 0.05, 128, "uint8")
    np.testing.assert_array_equal(got, want)


def test_quantized_mlp_within_one_point_of_fp32() -> None:
    from mlc.examples.mlp import load_data, numpy_forward, train_mlp
    from mlc.examples.qmlp import quantize_mlp, quantized_forward, quantized_mlp_graph

    xtr, ytr, xte, yte = load_data()
    params = train_mlp(xtr, ytr, epochs=10)
    q = quantize_mlp(params, xtr)
    mod = _build(quantized_mlp_graph(q, len(xte)))
    probs = mod(x=xte)[0]
    acc_fp32 = float((numpy_forward(params, xte).argmax(1) == yte).mean())
    acc_int8 = float((probs.argmax(1) == yte).mean())
    assert abs(acc_int8 - acc_fp32) <= 0.01, (acc_int8, acc_fp32)
    # the compiled graph does the numpy reference's integer arithmetic
    np.testing.assert_array_equal(probs.argmax(1), quantized_forward(q, xte).argmax(1))


def test_quantize_7_bits_clips_to_127() -> None:
    x = graph.var("x", (2, 16))
    g = graph.Graph([x], [graph.qnn.quantize(x, 0.5, zero_point=0, bits=7)])
    v = np.linspace(-10, 90, 32, dtype=np.float32).reshape(2, 16)
    out = _build(g)(x=v)[0]
    np.testing.assert_array_equal(out, ref_quantize(v, 0.5, 0, "uint8", bits=7))
    assert out.dtype == np.uint8 and out.min() == 0 and out.max() == 127


@pytest.mark.parametrize("batch,units,inp", [(5, 10, 13), (8, 32, 64), (64, 64, 64)])
def test_7_bit_layer_runs_on_dp4a_u7_and_is_exact(batch: int, units: int, inp: int) -> None:
    rng = np.random.default_rng(batch * units + inp)
    w = rng.integers(-128, 128, (units, inp)).astype(np.int8)
    w[0] = -128
    s = rng.uniform(0.001, 0.01, units).astype(np.float32)
    b = rng.standard_normal(units).astype(np.float32)
    x = graph.var("x", (batch, inp))
    h = graph.qnn.quantize(x, 1.0, zero_point=0, bits=7)
    acc = graph.qnn.dense(h, w)
    assert acc.attrs["data_bits"] == 7
    y = graph.nn.relu(graph.nn.bias_add(graph.qnn.dequantize(acc, s), graph.const(b)))
    g = graph.Graph([x], [graph.qnn.quantize(y, 0.05, zero_point=0, bits=7)])
    mod = _build(g)
    assert any("dp4a_u7(" in str(k.lowered) for k in mod.kernels)
    xv = rng.uniform(-5, 140, (batch, inp)).astype(np.float32)
    xv[0] = 127.0  # the largest 7-bit activation against w[0] = -128
    got = mod(x=xv)[0]
    hq = ref_quantize(xv, 1.0, 0, "uint8", bits=7).astype(np.int32)
    want_acc = hq @ w.astype(np.int32).T
    want = ref_quantize(np.maximum(want_acc.astype(np.float32) * s + b, 0), 0.05, 0, "uint8",
                        bits=7)
    np.testing.assert_array_equal(got, want)


def test_quantized_mlp_7_and_8_bit_builds_agree() -> None:
    from mlc.examples.mlp import load_data, train_mlp
    from mlc.examples.qmlp import quantize_mlp, quantized_mlp_graph

    xtr, ytr, xte, _ = load_data()
    q = quantize_mlp(train_mlp(xtr, ytr, epochs=3), xtr)
    assert all(q.unsigned), "pixels and relu outputs are non-negative"
    x = xte[:64]
    seven = _build(quantized_mlp_graph(q, 64))
    eight = _build(quantized_mlp_graph(q, 64, seven_bits=False))
    assert any("dp4a_u7(" in str(k.lowered) for k in seven.kernels)
    assert not any("dp4a_u7(" in str(k.lowered) for k in eight.kernels)
    np.testing.assert_array_equal(seven(x=x)[0], eight(x=x)[0])
