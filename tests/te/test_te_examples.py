"""The seeds' tensor-expression examples, built with mlc.te and checked against numpy twice:
through the reference evaluator (mlc.testing.evaluate) and through the loop program
(te.create_prim_func run by mlc.testing.eval_prim_func)."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.testing import eval_prim_func, evaluate

RNG = np.random.default_rng(0)


def rand(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def run_both(tensors: list[te.Tensor], inputs: dict[te.Tensor, np.ndarray],
             out_shapes: dict[str, tuple[int, ...]], sizes: dict | None = None
             ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Evaluate with the reference and with the interpreter; return both result dicts."""
    ref = evaluate(tensors, inputs, sizes=sizes)
    func = te.create_prim_func(tensors)
    arrays = []
    got: dict[str, np.ndarray] = {}
    for t in tensors:
        if t in inputs:
            arrays.append(inputs[t])
        else:
            arr = np.full(out_shapes[t.name], 7, dtype=t.dtype)
            got[t.name] = arr
            arrays.append(arr)
    eval_prim_func(func, *arrays)
    return ref, got


def test_vector_add_symbolic():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    a, b = rand(37), rand(37)
    ref, got = run_both([A, B, C], {A: a, B: b}, {"C": (37,)})
    np.testing.assert_array_equal(ref["C"], a + b)
    np.testing.assert_array_equal(got["C"], a + b)


def test_matmul():
    n = 24
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    a, b = rand(n, n), rand(n, n)
    ref, got = run_both([A, B, C], {A: a, B: b}, {"C": (n, n)})
    np.testing.assert_allclose(ref["C"], a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got["C"], a @ b, rtol=1e-4, atol=1e-4)
    assert got["C"].dtype == np.float32


def test_transposed_matmul_symbolic_mnh():
    # seed 000: C[i, j] = sum_k A[i, k] * B[j, k] with symbolic m, n, h
    m, n, h = te.var("m"), te.var("n"), te.var("h")
    A = te.placeholder((m, h), name="A")
    B = te.placeholder((n, h), name="B")
    k = te.reduce_axis((0, h), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k))
    a, b = rand(5, 9), rand(7, 9)
    ref, got = run_both([A, B, C], {A: a, B: b}, {C.name: (5, 7)})
    np.testing.assert_allclose(ref[C.name], a @ b.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[C.name], a @ b.T, rtol=1e-5, atol=1e-5)


def test_dense_then_bias_intermediate():
    # seed 000: out = dense(data, w); out = out + bias  (the dense result is an intermediate)
    n, m, h = 6, 5, 8
    data = te.placeholder((n, h), name="data")
    w = te.placeholder((m, h), name="w")
    bias = te.placeholder((n,), name="bias")
    k = te.reduce_axis((0, h), name="k")
    dense = te.compute((n, m), lambda i, j: te.sum(data[i, k] * w[j, k], k), name="dense")
    out = te.compute((n, m), lambda i, j: dense[i, j] + bias[i], name="out")
    d, ww, bb = rand(n, h), rand(m, h), rand(n)
    ref, got = run_both([data, w, bias, out], {data: d, w: ww, bias: bb}, {"out": (n, m)})
    expect = d @ ww.T + bb[:, None]
    np.testing.assert_allclose(ref["out"], expect, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["out"], expect, rtol=1e-5, atol=1e-5)


def conv2d_reference(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    c_in, hh, ww = x.shape
    c_out, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    oh, ow = hh + 2 * pad - kh + 1, ww + 2 * pad - kw + 1
    out = np.zeros((c_out, oh, ow), dtype=np.float64)
    for dy in range(kh):
        for dx in range(kw):
            out += np.einsum("oc,chw->ohw", w[:, :, dy, dx], xp[:, dy : dy + oh, dx : dx + ow])
    return out.astype(np.float32)


def test_conv2d_with_padding():
    c_in, c_out, hw, kk, pad = 3, 4, 6, 3, 1
    data = te.placeholder((c_in, hw, hw), name="data")
    w = te.placeholder((c_out, c_in, kk, kk), name="w")
    padded = te.compute(
        (c_in, hw + 2 * pad, hw + 2 * pad),
        lambda c, y, x: te.if_then_else(
            te.all(y >= pad, y < hw + pad, x >= pad, x < hw + pad),
            data[c, y - pad, x - pad],
            0.0,
        ),
        name="padded",
    )
    kc = te.reduce_axis((0, c_in), name="kc")
    ky = te.reduce_axis((0, kk), name="ky")
    kx = te.reduce_axis((0, kk), name="kx")
    out = te.compute(
        (c_out, hw, hw),
        lambda i, y, x: te.sum(padded[kc, y + ky, x + kx] * w[i, kc, ky, kx], [kx, ky, kc]),
        name="out",
    )
    d, ww = rand(c_in, hw, hw), rand(c_out, c_in, kk, kk)
    ref, got = run_both([data, w, out], {data: d, w: ww}, {"out": (c_out, hw, hw)})
    expect = conv2d_reference(d, ww, pad)
    np.testing.assert_allclose(ref["out"], expect, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got["out"], expect, rtol=1e-4, atol=1e-4)


def test_padding_reads_out_of_bounds_only_on_untaken_side():
    n = 5
    A = te.placeholder((n,), name="A")
    P = te.compute(
        (n + 2,), lambda i: te.if_then_else(te.all(i >= 1, i <= n), A[i - 1], -1.0), name="P"
    )
    a = rand(n)
    ref, got = run_both([A, P], {A: a}, {"P": (n + 2,)})
    expect = np.concatenate([[-1.0], a, [-1.0]]).astype("float32")
    np.testing.assert_array_equal(ref["P"], expect)
    np.testing.assert_array_equal(got["P"], expect)


def test_max_pooling():
    c, hw, k, stride = 2, 8, 2, 2
    data = te.placeholder((c, hw, hw), name="data")
    ry = te.reduce_axis((0, k), name="ry")
    rx = te.reduce_axis((0, k), name="rx")
    out_hw = hw // stride
    pool = te.compute(
        (c, out_hw, out_hw),
        lambda ch, y, x: te.max(data[ch, y * stride + ry, x * stride + rx], axis=[ry, rx]),
        name="pool",
    )
    d = rand(c, hw, hw)
    ref, got = run_both([data, pool], {data: d}, {"pool": (c, out_hw, out_hw)})
    expect = d.reshape(c, out_hw, k, out_hw, k).max(axis=(2, 4))
    np.testing.assert_array_equal(ref["pool"], expect)
    np.testing.assert_array_equal(got["pool"], expect)


def test_softmax():
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    k1 = te.reduce_axis((0, n), name="k1")
    k2 = te.reduce_axis((0, n), name="k2")
    mx = te.compute((m,), lambda i: te.max(X[i, k1], axis=k1), name="mx")
    ex = te.compute((m, n), lambda i, j: te.exp(X[i, j] - mx[i]), name="ex")
    sm = te.compute((m,), lambda i: te.sum(ex[i, k2], axis=k2), name="sm")
    Y = te.compute((m, n), lambda i, j: ex[i, j] / sm[i], name="Y")
    x = rand(4, 10) * 5
    ref, got = run_both([X, Y], {X: x}, {"Y": (4, 10)})
    e = np.exp(x - x.max(axis=1, keepdims=True))
    expect = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(ref["Y"], expect, rtol=1e-5)
    np.testing.assert_allclose(got["Y"], expect, rtol=1e-5)
    # the intermediates are alloc_buffers of the root block
    func = te.create_prim_func([X, Y])
    assert [b.name for b in func.body.block.alloc_buffers] == ["mx", "ex", "sm"]


def test_cumsum_scan():
    # seed 000's cumsum, with symbolic m, n
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
    Y = te.scan(s_init, s_update, s_state, inputs=[X])
    x = rand(6, 3)
    ref, got = run_both([X, Y], {X: x}, {Y.name: (6, 3)})
    np.testing.assert_allclose(ref[Y.name], np.cumsum(x, axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[Y.name], np.cumsum(x, axis=0), rtol=1e-5, atol=1e-6)
    assert Y.op.input_tensors == [X]


def test_casts_and_integer_division():
    n = 12
    A = te.placeholder((n,), dtype="int32", name="A")
    B = te.compute((n,), lambda i: (A[i] // 3 + A[i] % 3).astype("float64") * 0.5, name="B")
    C = te.compute((n,), lambda i: B[i].astype("int8"), name="C")
    a = np.arange(-6, 6, dtype="int32") * 7
    ref, got = run_both([A, B, C], {A: a}, {"B": (n,), "C": (n,)})
    expect_b = ((a // 3) + (a % 3)).astype("float64") * 0.5
    for res in (ref, got):
        np.testing.assert_array_equal(res["B"], expect_b)
        assert res["B"].dtype == np.float64
        np.testing.assert_array_equal(res["C"], np.trunc(expect_b).astype("int8"))
        assert res["C"].dtype == np.int8


def test_user_comm_reducer_product():
    product = te.comm_reducer(lambda x, y: x * y, lambda dtype: te.const(1, dtype), name="prod")
    n, r = 4, 5
    A = te.placeholder((n, r), name="A")
    k = te.reduce_axis((0, r), name="k")
    P = te.compute((n,), lambda i: product(A[i, k], axis=k), name="P")
    a = rand(n, r)
    ref, got = run_both([A, P], {A: a}, {"P": (n,)})
    np.testing.assert_allclose(ref["P"], a.prod(axis=1), rtol=1e-5)
    np.testing.assert_allclose(got["P"], a.prod(axis=1), rtol=1e-5)


def test_reducer_where():
    n, r = 5, 8
    A = te.placeholder((n, r), name="A")
    k = te.reduce_axis((0, r), name="k")
    S = te.compute((n,), lambda i: te.sum(A[i, k], axis=k, where=A[i, k] > 0), name="S")
    M = te.compute((n,), lambda i: te.min(A[i, k], axis=k, where=k < i), name="M")
    a = rand(n, r)
    ref, got = run_both([A, S, M], {A: a}, {"S": (n,), "M": (n,)})
    expect_m = np.array(
        [a[i, :i].min() if i else np.inf for i in range(n)], dtype="float32"
    )
    for res in (ref, got):
        np.testing.assert_allclose(res["S"], np.where(a > 0, a, 0).sum(axis=1), rtol=1e-5)
        np.testing.assert_array_equal(res["M"], expect_m)


def test_relu_with_two_argument_max_and_math():
    # seed 000: tvm.max(0, out[*i]) combines two values
    n = 9
    A = te.placeholder((3, n), name="A")
    R = te.compute((3, n), lambda *i: te.max(0.0, A[i]), name="R")
    S = te.compute(
        (3, n), lambda i, j: te.sigmoid(A[i, j]) + te.tanh(A[i, j]) * te.abs(A[i, j]), name="S"
    )
    Q = te.compute((3, n), lambda i, j: te.sqrt(te.abs(A[i, j])) + te.exp(A[i, j]), name="Q")
    a = rand(3, n)
    ref, got = run_both([A, R, S, Q], {A: a}, {"R": (3, n), "S": (3, n), "Q": (3, n)})
    for res in (ref, got):
        np.testing.assert_array_equal(res["R"], np.maximum(a, 0))
        np.testing.assert_allclose(
            res["S"], 1 / (1 + np.exp(-a)) + np.tanh(a) * np.abs(a), rtol=1e-5
        )
        np.testing.assert_allclose(res["Q"], np.sqrt(np.abs(a)) + np.exp(a), rtol=1e-5)


def test_sizes_argument_binds_output_only_sizes():
    n = te.var("n")
    C = te.compute((n,), lambda i: i.astype("float32") * 2.0, name="C")
    out = evaluate([C], {}, sizes={"n": 4})
    np.testing.assert_array_equal(out["C"], np.arange(4, dtype="float32") * 2)


@pytest.mark.parametrize("dtype", ["float16", "float64", "int8", "int64"])
def test_dtypes_flow_through(dtype):
    A = te.placeholder((6,), dtype=dtype, name="A")
    B = te.compute((6,), lambda i: A[i] + A[i], name="B")
    assert B.dtype == dtype
    a = (np.arange(6) * 30).astype(dtype)
    ref, got = run_both([A, B], {A: a}, {"B": (6,)})
    np.testing.assert_array_equal(ref["B"], a + a)
    np.testing.assert_array_equal(got["B"], a + a)
    assert got["B"].dtype == np.dtype(dtype)


def test_scan_with_a_reduction_in_the_update():
    # a tiny linear RNN: h[t] = h[t - 1] @ W
    m, n = te.var("m"), 4
    X = te.placeholder((m, n), name="X")
    W = te.placeholder((n, n), name="W")
    h = te.placeholder((m, n), name="h")
    k = te.reduce_axis((0, n), name="k")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    upd = te.compute((m, n), lambda t, i: te.sum(h[t - 1, k] * W[k, i], axis=k), name="upd")
    Y = te.scan(init, upd, h, inputs=[X, W], name="rnn")
    x, w = rand(5, n), rand(n, n) * 0.5
    ref, got = run_both([X, W, Y], {X: x, W: w}, {"rnn": (5, n)})
    expect = [x[0]]
    for _ in range(4):
        expect.append(expect[-1] @ w)
    np.testing.assert_allclose(ref["rnn"], np.array(expect), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["rnn"], np.array(expect), rtol=1e-5, atol=1e-6)
    assert "reads(rnn[vt - 1, vk], W[vk, vi_1])" in str(te.create_prim_func([X, W, Y]))
    # compiled: the scan's step t is ordered, not a reduction, so the update's init runs at
    # every t (the build referred to an unbound vt, and the init ran only at the first t)
    built = np.full((5, n), 7, dtype="float32")
    mlc.build(te.create_prim_func([X, W, Y]), target="llvm")(x, w, built)
    np.testing.assert_allclose(built, np.array(expect), rtol=1e-5, atol=1e-6)
