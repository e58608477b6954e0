"""Frontends (torch.fx, onnx): optional dependencies, skipped with a reason when absent."""

from __future__ import annotations

import numpy as np
import pytest

from mlc import graph


def test_from_torch_mlp_and_convnet() -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed (optional)")
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(4 * 4 * 4, 10)

        def forward(self, x):  # type: ignore[no-untyped-def]
            x = self.pool(torch.relu(self.bn(self.conv(x))))
            return self.fc(torch.flatten(x, 1))

    net = Net().eval()
    g = graph.from_torch(net, {"x": (2, 1, 8, 8)})
    xv = np.random.default_rng(0).random((2, 1, 8, 8)).astype("float32")
    with torch.no_grad():
        expected = net(torch.from_numpy(xv)).numpy()
    mod = graph.build(graph.optimize(g))
    np.testing.assert_allclose(mod(x=xv)[0], expected, rtol=1e-4, atol=1e-4)


def test_from_onnx_gemm_relu() -> None:
    onnx = pytest.importorskip("onnx", reason="onnx is not installed (optional)")
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).standard_normal((4, 3)).astype("float32")
    b = np.ones(4, "float32")
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["y"])]
    model = helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]))
    g = graph.from_onnx(model)
    xv = np.random.default_rng(1).random((2, 3)).astype("float32")
    np.testing.assert_allclose(graph.evaluate(g, x=xv)[0], np.maximum(xv @ w.T + b, 0),
                               rtol=1e-5)
    assert onnx is not None


def test_from_torch_without_torch_says_so() -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs PyTorch"):
            graph.from_torch(object(), {"x": (1,)})
    else:
        pytest.skip("torch is installed; the missing-torch message cannot be checked")
