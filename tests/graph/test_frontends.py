"""Frontends (torch.fx, onnx) against torch's own outputs. torch and onnx are the optional
``frontends`` extra; each test skips with a reason when its package is absent."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mlc import graph
from mlc.errors import GraphError

RNG = np.random.default_rng(0)


def _torch() -> Any:
    return pytest.importorskip("torch", reason="torch is not installed (optional extra)")


def mlp_model(torch: Any) -> Any:
    nn = torch.nn
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10), nn.Softmax(dim=1))


def conv_model(torch: Any) -> Any:
    nn, F = torch.nn, torch.nn.functional

    class ConvNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.MaxPool2d(2)
            self.conv2 = nn.Conv2d(4, 6, 3, stride=1, padding=1, bias=False)
            self.avg = nn.AvgPool2d(2)
            self.flat = nn.Flatten()
            self.fc = nn.Linear(6 * 2 * 2, 10)
            self.act = nn.ReLU()

        def forward(self, x):  # type: ignore[no-untyped-def]
            y = self.pool(self.act(self.bn(self.conv(x))))
            z = self.conv2(y)
            z = torch.add(F.relu(z), torch.mul(z, 0.5)) * z   # functional add/mul/relu
            z = self.avg(z) + torch.relu(self.avg(z))
            return self.fc(self.flat(z))

    net = ConvNet()
    with torch.no_grad():   # eval-mode batch norm with statistics that are not 0 and 1
        net.bn.running_mean.copy_(torch.randn(4) * 0.2)
        net.bn.running_var.copy_(torch.rand(4) + 0.5)
        net.bn.weight.copy_(torch.rand(4) + 0.5)
        net.bn.bias.copy_(torch.randn(4) * 0.1)
    return net.eval()


def torch_out(torch: Any, model: Any, xv: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.from_numpy(xv)).numpy()  # type: ignore[no-any-return]


def check_built(g: graph.Graph, xv: np.ndarray, want: np.ndarray) -> None:
    mod = graph.build(graph.optimize(g))
    assert mod.num_native_calls == 1
    name = g.inputs[0].name
    np.testing.assert_allclose(mod(**{name: xv})[0], want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("which, shape", [("mlp", (3, 64)), ("conv", (2, 1, 8, 8))])
def test_from_torch_matches_torch(which: str, shape: tuple[int, ...]) -> None:
    torch = _torch()
    torch.manual_seed(0)
    model = mlp_model(torch) if which == "mlp" else conv_model(torch)
    g = graph.from_torch(model, [shape])
    xv = RNG.random(shape).astype("float32")
    want = torch_out(torch, model, xv)
    got = graph.evaluate(g, **{g.inputs[0].name: xv})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    check_built(g, xv, want)


def test_from_torch_unsupported_op_names_it_and_its_place() -> None:
    torch = _torch()
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.up = nn.Upsample(scale_factor=2)

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.up(self.fc(x))

    with pytest.raises(GraphError, match=r"module Upsample \(self\.up\).*node 'up'"):
        graph.from_torch(Net(), {"x": (1, 1, 4)})

    class Cum(nn.Module):
        def forward(self, x):  # type: ignore[no-untyped-def]
            return torch.cumsum(torch.relu(x), 1)

    with pytest.raises(GraphError, match=r"function cumsum, used by the traced node 'cumsum'"):
        graph.from_torch(Cum(), {"x": (2, 3)})


def test_from_torch_rejects_ceil_mode_pools() -> None:
    torch = _torch()
    model = torch.nn.Sequential(torch.nn.MaxPool2d(2, ceil_mode=True))
    with pytest.raises(GraphError, match="ceil_mode"):
        graph.from_torch(model, [(1, 1, 5, 5)])


def _export(torch: Any, model: Any, shape: tuple[int, ...], path: Path) -> Path:
    """The model as an ONNX file, with torch's TorchScript exporter (the newer dynamo
    exporter needs onnxscript, which is not part of the extra)."""
    import warnings

    x = torch.zeros(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(model, (x,), str(path), dynamo=False, input_names=["x"],
                              output_names=["y"])
        except ImportError as err:  # pragma: no cover - depends on the torch build
            pytest.skip(f"torch.onnx.export needs a package that is not installed: {err}")
    return path


@pytest.mark.parametrize("which, shape", [("mlp", (3, 64)), ("conv", (2, 1, 8, 8))])
def test_from_onnx_exported_from_torch(which: str, shape: tuple[int, ...],
                                       tmp_path: Path) -> None:
    torch = _torch()
    onnx = pytest.importorskip("onnx", reason="onnx is not installed (optional extra)")
    torch.manual_seed(1)
    model = mlp_model(torch) if which == "mlp" else conv_model(torch)
    path = _export(torch, model, shape, tmp_path / f"{which}.onnx")
    xv = RNG.random(shape).astype("float32")
    want = torch_out(torch, model, xv)
    for source in (str(path), onnx.load(str(path))):     # a path or a ModelProto
        g = graph.from_onnx(source)
        np.testing.assert_allclose(graph.evaluate(g, x=xv)[0], want, rtol=1e-4, atol=1e-5)
    check_built(g, xv, want)


def test_from_onnx_helper_built_model_and_unsupported_op() -> None:
    pytest.importorskip("onnx", reason="onnx is not installed (optional extra)")
    from onnx import TensorProto, helper, numpy_helper

    w = RNG.standard_normal((4, 3)).astype("float32")
    b = np.ones(4, "float32")
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["y"])]
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    g = graph.from_onnx(helper.make_model(helper.make_graph(nodes, "g", [x_info], [y_info],
                                                            inits)))
    xv = RNG.random((2, 3)).astype("float32")
    check_built(g, xv, np.maximum(xv @ w.T + b, 0))

    nodes.append(helper.make_node("Hardmax", ["y"], ["z"], name="the_hardmax"))
    z_info = helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 4])
    bad = helper.make_model(helper.make_graph(nodes, "g", [x_info], [z_info], inits))
    with pytest.raises(GraphError, match=r"no conversion for op Hardmax, node 2 'the_hardmax'"):
        graph.from_onnx(bad)


def test_from_torch_without_torch_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    monkeypatch.setitem(sys.modules, "torch.fx", None)
    with pytest.raises(ImportError, match="needs PyTorch"):
        graph.from_torch(object(), {"x": (1,)})
