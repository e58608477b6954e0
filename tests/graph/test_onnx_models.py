"""A student's models through ONNX (issue 30): the MLP both ways (Gemm; MatMul + Add), a small
CNN and a transformer encoder block, built with onnx.helper in
mlc.graph.frontend.onnx_examples, imported, compiled, and checked against numpy (the ops'
references) and against ONNX Runtime."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mlc import graph
from mlc.errors import GraphError

onnx = pytest.importorskip("onnx", reason="onnx is not installed (optional extra)")
from mlc.graph.frontend import onnx_examples as ex  # noqa: E402

helper, TP = onnx.helper, onnx.TensorProto


def _input(model: Any, seed: int = 0) -> np.ndarray:
    dims = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)
    return np.random.default_rng(seed).standard_normal(dims).astype("float32")


def _ort(model: Any, x: np.ndarray) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (frontends)")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _check(model: Any, tol: float = 1e-4) -> graph.GraphModule:
    g = graph.from_onnx(model)
    x = _input(model)
    mod = graph.build(graph.optimize(g), target="llvm")
    got = mod(x=x)[0]
    ref = graph.build(g, target="numpy")(x=x)[0]
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(got, _ort(model, x), rtol=tol, atol=tol)
    return mod


@pytest.mark.parametrize("batch", [1, 64])
@pytest.mark.parametrize("spelling", ["gemm", "matmul"])
def test_mlp_both_spellings(spelling: str, batch: int) -> None:
    mod = _check(ex.mlp(spelling, batch))
    assert [k.group.name for k in mod.kernels] == ["fused_dense_pack_add_relu"] * 2 + [
        "fused_dense_pack_add"]


def test_small_cnn() -> None:
    mod = _check(ex.convnet(1))
    names = [k.group.name for k in mod.kernels]
    assert sum("conv2d" in n for n in names) == 2  # conv + bias + batch norm + relu each


def test_transformer_block() -> None:
    _check(ex.transformer(), tol=2e-4)


def test_transformer_block_small_odd_sizes() -> None:
    _check(ex.transformer(seq=7, width=12, heads=3, mlp_ratio=2, batch=2), tol=2e-4)


# -- the converters one by one ------------------------------------------------------------------
def _one(op: str, inputs: list[tuple[str, tuple[int, ...]]], out_shape: tuple[int, ...],
         inits: dict[str, np.ndarray] | None = None, opset: int = 20, **attrs: Any) -> Any:
    node = helper.make_node(op, [n for n, _ in inputs] + list(inits or {}), ["y"], **attrs)
    g = helper.make_graph([node], op, [helper.make_tensor_value_info(n, TP.FLOAT, list(s))
                                       for n, s in inputs],
                          [helper.make_tensor_value_info("y", TP.FLOAT, list(out_shape))],
                          [onnx.numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("sa,sb,so", [
    ((2, 3, 5, 4), (2, 3, 4, 6), (2, 3, 5, 6)),   # 4-d attention shapes
    ((3, 5, 4), (3, 4, 2), (3, 5, 2)),
    ((3, 5, 4), (1, 4, 2), (3, 5, 2)),             # the second's batch of 1 broadcasts
])
def test_matmul_batched(sa: tuple[int, ...], sb: tuple[int, ...], so: tuple[int, ...]) -> None:
    m = _one("MatMul", [("a", sa), ("b", sb)], so)
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(sa).astype("f4"), rng.standard_normal(sb).astype("f4")
    mod = graph.build(graph.optimize(graph.from_onnx(m)), target="llvm")
    np.testing.assert_allclose(mod(a=a, b=b)[0], a @ b, rtol=1e-5, atol=1e-5)


def test_matmul_3d_by_constant_weight_is_packed() -> None:
    w = np.random.default_rng(6).standard_normal((8, 32)).astype("f4")
    m = _one("MatMul", [("x", (2, 5, 8))], (2, 5, 32), inits={"w": w})
    opt = graph.optimize(graph.from_onnx(m))
    assert "nn.dense_pack" in {n.op.name for n in opt.calls()}
    x = _input(m)
    np.testing.assert_allclose(graph.build(opt, target="llvm")(x=x)[0], x @ w, rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("sa,sb", [((3,), (3, 4)), ((2, 3), (4, 5)), ((2, 3, 4), (3, 4, 5)),
                                   ((2, 3, 4), (2, 2, 4, 5))])
def test_matmul_shapes_refused(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    m = _one("MatMul", [("a", sa), ("b", sb)], (1,))
    with pytest.raises(GraphError, match="MatMul of shapes"):
        graph.from_onnx(m)


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_normalization(axis: int) -> None:
    rng = np.random.default_rng(7)
    tail = (6,) if axis == -1 else (4, 6)  # ONNX normalizes over every axis from axis on
    g = (1 + rng.standard_normal(tail)).astype("f4")
    b = rng.standard_normal(tail).astype("f4")
    m = _one("LayerNormalization", [("x", (3, 4, 6))], (3, 4, 6), inits={"g": g, "b": b},
             opset=17, axis=axis, epsilon=1e-3)
    x = _input(m)
    mod = graph.build(graph.optimize(graph.from_onnx(m)), target="llvm")
    red = tuple(range(axis % 3, 3))
    mu = x.mean(axis=red, keepdims=True)
    var = x.var(axis=red, keepdims=True)
    ref = (x - mu) / np.sqrt(var + 1e-3) * g + b
    np.testing.assert_allclose(mod(x=x)[0], ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mod(x=x)[0], _ort(m, x), rtol=1e-4, atol=1e-4)


def test_layer_normalization_wrong_scale_refused() -> None:
    m = _one("LayerNormalization", [("x", (3, 6))], (3, 6),
             inits={"g": np.ones(5, "f4"), "b": np.zeros(6, "f4")}, opset=17)
    with pytest.raises(GraphError, match="Scale has shape"):
        graph.from_onnx(m)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate: str) -> None:
    m = _one("Gelu", [("x", (4, 33))], (4, 33), approximate=approximate)
    x = _input(m) * 4
    x[0, :4] = [0.0, -0.0, 30.0, -30.0]
    mod = graph.build(graph.optimize(graph.from_onnx(m)), target="llvm")
    np.testing.assert_allclose(mod(x=x)[0], _ort(m, x), rtol=1e-5, atol=1e-5)


def test_gelu_unknown_approximation_refused() -> None:
    m = _one("Gelu", [("x", (4,))], (4,), approximate="fast")
    with pytest.raises(GraphError, match="approximate"):
        graph.from_onnx(m)


@pytest.mark.parametrize("axis", [3, -4, 7])
def test_layer_normalization_axis_out_of_range_refused(axis: int) -> None:
    """axis=3 of a 3-d input was taken modulo 3 (axis 0): a silently different norm."""
    m = _one("LayerNormalization", [("x", (3, 4, 6))], (3, 4, 6),
             inits={"g": np.ones(6, "f4"), "b": np.zeros(6, "f4")}, opset=17, axis=axis)
    with pytest.raises(GraphError, match="axis must be in"):
        graph.from_onnx(m)


def test_attention_with_masked_scores_matches_ort() -> None:
    """Scores of -inf (a causal mask written into the input) and a row of large values:
    softmax's vector exp clamps its argument, so a masked score gives 1e-38, not 0."""
    m = _one("Softmax", [("x", (2, 4, 32))], (2, 4, 32), opset=13, axis=-1)
    x = _input(m) * 30
    x[0, 1, 5:] = -np.inf
    x[1, 2, :] = 1e4
    mod = graph.build(graph.optimize(graph.from_onnx(m)), target="llvm")
    np.testing.assert_allclose(mod(x=x)[0], _ort(m, x), rtol=1e-5, atol=1e-7)


def _decomposed_block(opset: int) -> Any:
    """Layer norm and exact GELU as exporters before LayerNormalization/Gelu write them:
    ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul, Add; Div sqrt 2, Erf, Add 1,
    Mul x, Mul 0.5."""
    nh = onnx.numpy_helper
    rng = np.random.default_rng(11)
    c = {"two": np.array(2.0, "f4"), "eps": np.array(1e-5, "f4"), "one": np.array(1.0, "f4"),
         "half": np.array(0.5, "f4"), "sqrt2": np.array(np.sqrt(2.0), "f4"),
         "g": (1 + 0.1 * rng.standard_normal(32)).astype("f4"),
         "b": rng.standard_normal(32).astype("f4")}
    mean_args: dict[str, Any] = {"axes": [-1]} if opset < 18 else {}
    axes_in = [] if opset < 18 else ["axes"]
    if opset >= 18:
        c["axes"] = np.array([-1], np.int64)
    n = helper.make_node
    nodes = [n("ReduceMean", ["x"] + axes_in, ["mu"], **mean_args),
             n("Sub", ["x", "mu"], ["d"]), n("Pow", ["d", "two"], ["d2"]),
             n("ReduceMean", ["d2"] + axes_in, ["var"], **mean_args),
             n("Add", ["var", "eps"], ["ve"]), n("Sqrt", ["ve"], ["sd"]),
             n("Div", ["d", "sd"], ["xn"]), n("Mul", ["xn", "g"], ["xg"]),
             n("Add", ["xg", "b"], ["h"]),
             n("Div", ["h", "sqrt2"], ["hs"]), n("Erf", ["hs"], ["e"]),
             n("Add", ["e", "one"], ["e1"]), n("Mul", ["h", "e1"], ["he"]),
             n("Mul", ["he", "half"], ["y"])]
    g = helper.make_graph(nodes, "decomposed",
                          [helper.make_tensor_value_info("x", TP.FLOAT, [4, 16, 32])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [4, 16, 32])],
                          [nh.from_array(v, k) for k, v in c.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("opset", [13, 18])
def test_decomposed_layer_norm_and_erf_gelu(opset: int) -> None:
    _check(_decomposed_block(opset))


def test_reduce_mean_axis_out_of_range_refused() -> None:
    m = _one("ReduceMean", [("x", (3, 4))], (3, 1), opset=13, axes=[2])
    with pytest.raises(GraphError, match="ReduceMean over axis 2"):
        graph.from_onnx(m)


def test_example_models_refuse_bad_arguments_with_an_argument_error() -> None:
    from mlc.errors import ArgumentError

    with pytest.raises(ArgumentError, match="spelling must be 'gemm' or 'matmul'"):
        ex.mlp(spelling="conv")
    with pytest.raises(ArgumentError, match="not a multiple of heads"):
        ex.transformer(width=10, heads=4)
