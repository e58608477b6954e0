"""One torch importer: graph.from_torch and relax.from_fx share default converters, take the
caller's maps first, and name the fx node (and the converter to add) for anything else."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import graph
from mlc.errors import GraphError
from mlc.graph import relax

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional
fx = torch.fx


def _run_graph(model, x: np.ndarray) -> np.ndarray:
    g = graph.from_torch(model, {"x": x.shape})
    return graph.build(graph.optimize(g))(x=x)[0]


def _run_relax(model, x: np.ndarray) -> np.ndarray:
    mod = relax.from_fx(fx.symbolic_trace(model), [x.shape])
    return np.asarray(mlc.build(mod)["main"](x))


def _both(model, x: np.ndarray) -> None:
    model = model.eval()
    expected = model(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(_run_graph(model, x), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_run_relax(model, x), expected, rtol=1e-4, atol=1e-5)


class CourseNet(nn.Module):
    """The MLC course's fx example: torch.matmul on a parameter, + 1.0, torch.relu."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(128, 128) * 0.1)

    def forward(self, x):
        x = torch.matmul(x, self.weight)
        x = x + 1.0
        x = torch.relu(x)
        return x


class Functional(nn.Module):
    """@, F.linear, F.relu, nn.ReLU, add, mul, flatten, reshape/view with -1, softmax."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(12, 8) * 0.3)
        self.lin = nn.Linear(8, 6)
        self.w2 = nn.Parameter(torch.randn(5, 6) * 0.3)
        self.b2 = nn.Parameter(torch.randn(5))
        self.act = nn.ReLU()

    def forward(self, x):
        h = F.relu(x @ self.w)
        h = self.act(self.lin(h))
        h = torch.add(h, h * 0.5)
        h = torch.mul(h, 2.0)
        h = F.linear(h, self.w2, self.b2)
        h = h.view(-1, 5).reshape(2, 5)
        h = torch.reshape(h, (2, -1))
        h = torch.flatten(h, 1)
        return F.softmax(h, dim=-1)


class Conv(nn.Module):
    """conv2d, batch_norm (eval), max_pool2d as modules and as functions."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.w = nn.Parameter(torch.randn(6, 4, 3, 3) * 0.2)
        self.mean = nn.Parameter(torch.randn(6) * 0.1, requires_grad=False)
        self.var = nn.Parameter(torch.rand(6) + 0.5, requires_grad=False)
        self.fc = nn.Linear(6 * 2 * 2, 3)

    def forward(self, x):
        h = F.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        h = F.conv2d(h, self.w, None, 1, 1)
        h = F.batch_norm(h, self.mean, self.var, training=False)
        h = nn.functional.max_pool2d(h, kernel_size=2)
        return self.fc(h.flatten(1))


def test_course_fx_example_needs_no_maps() -> None:
    x = np.random.default_rng(0).random((1, 128), dtype=np.float32)
    _both(CourseNet(), x)


def test_functional_forms_convert_in_both_importers() -> None:
    x = np.random.default_rng(1).random((2, 12), dtype=np.float32)
    _both(Functional(), x)


def test_conv_batch_norm_pool_convert_in_both_importers() -> None:
    with torch.no_grad():
        model = Conv()
        model.bn.running_mean.copy_(torch.randn(4) * 0.1)
        model.bn.running_var.copy_(torch.rand(4) + 0.5)
    x = np.random.default_rng(2).random((2, 1, 8, 8), dtype=np.float32)
    _both(model, x)


class Exp(nn.Module):
    def forward(self, x):
        return torch.relu(torch.exp(x))


def test_unknown_function_names_node_and_shows_the_converter() -> None:
    x = np.zeros((2, 3), "float32")
    with pytest.raises(GraphError) as err:
        graph.from_torch(Exp(), {"x": x.shape})
    text = str(err.value)
    assert "node 'exp'" in text
    assert "call_function_map={torch.exp: lambda bb, node_map, node:" in text
    with pytest.raises(GraphError, match=r"from_fx: .*'exp'.*\n.*call_function_map=\{torch\.exp"):
        relax.from_fx(fx.symbolic_trace(Exp()), [x.shape])
    with pytest.raises(GraphError, match=r"call_module_map=\{torch\.nn\.Upsample: lambda bb"):
        graph.from_torch(nn.Sequential(nn.Upsample(scale_factor=2)), {"input": (1, 1, 4)})


def test_callers_maps_come_first() -> None:
    """A user converter for torch.erf (graph level, and relax level with emit_te), and one
    for nn.Linear that replaces the default."""
    from mlc import te

    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    expected = torch.relu(torch.exp(torch.from_numpy(x))).numpy()
    g = graph.from_torch(Exp(), {"x": x.shape}, call_function_map={
        torch.exp: lambda bb, node_map, node: bb.emit(graph.exp(node_map[node.args[0]]))})
    np.testing.assert_allclose(graph.build(g)(x=x)[0], expected, rtol=1e-5, atol=1e-6)

    def exp_te(bb, node_map, node):
        return bb.emit_te(lambda a: te.compute(a.shape, lambda i, j: te.exp(a[i, j]),
                                               name="exp"), node_map[node.args[0]])

    mod = relax.from_fx(fx.symbolic_trace(Exp()), [x.shape],
                        call_function_map={torch.exp: exp_te})
    np.testing.assert_allclose(np.asarray(mlc.build(mod)["main"](x)), expected, rtol=1e-5,
                               atol=1e-6)

    seen = []

    def my_linear(bb, node_map, node, module):
        seen.append(type(module).__name__)
        w = graph.const(module.weight.detach().numpy())
        return graph.nn.dense(node_map[node.args[0]], w)  # no bias on purpose

    model = nn.Sequential(nn.Linear(3, 2)).eval()
    g2 = graph.from_torch(model, {"input": (1, 3)}, call_module_map={nn.Linear: my_linear})
    xi = np.ones((1, 3), "float32")
    np.testing.assert_allclose(graph.build(g2)(input=xi)[0],
                               xi @ model[0].weight.detach().numpy().T, rtol=1e-5)
    assert seen == ["Linear"]


def test_batch_norm_in_training_mode_is_refused() -> None:
    class BN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mean = nn.Parameter(torch.zeros(2), requires_grad=False)
            self.var = nn.Parameter(torch.ones(2), requires_grad=False)

        def forward(self, x):
            return F.batch_norm(x, self.mean, self.var, training=True)

    with pytest.raises(GraphError, match="inference mode only"):
        graph.from_torch(BN(), {"x": (1, 2, 2, 2)})


def test_matmul_of_unsupported_ranks_says_what_converts() -> None:
    class V(nn.Module):
        def forward(self, x):
            return torch.matmul(x, x)  # 1-d @ 1-d

    with pytest.raises(GraphError, match="2-d @ 2-d"):
        graph.from_torch(V(), {"x": (4,)})


def test_op_names_are_tvms_and_the_notes_op_map_by_name_works() -> None:
    """The notes key their lowering map by "relax.nn.relu" and look up call.op.name."""
    from mlc import topi

    x = relax.Var("x", relax.TensorStructInfo((2, 4), "float32"))
    call = relax.op.nn.relu(x)
    assert call.op.name == "relax.nn.relu"
    assert call.op == relax.Op.get("relax.nn.relu") == relax.Op.get("nn.relu")
    assert call.op.short_name == "nn.relu"
    assert {relax.Op.get("relax.nn.relu"): 1}[call.op] == 1

    def map_relu(bb, call):
        return bb.call_te(topi.nn.relu, call.args[0])

    op_map = {"relax.nn.relu": map_relu}

    @relax.expr_functor.mutator
    class LowerByName(relax.PyExprMutator):
        def __init__(self, mod) -> None:
            super().__init__()
            self.mod_ = mod

        def visit_call_(self, call):
            call = self.visit_expr_post_order(call)
            fn = op_map.get(call.op.name)
            return fn(self.builder_, call) if fn else call

        def transform(self):
            for global_var, func in self.mod_.functions.items():
                if isinstance(func, relax.Function):
                    self.builder_.update_func(global_var, self.visit_expr(func))
            return self.builder_.get()

    mod = relax.from_fx(fx.symbolic_trace(nn.Sequential(nn.ReLU())), [(2, 4)])
    assert [b.value.op.name for b in mod["main"].bindings()
            if isinstance(b.value, relax.Call)] == ["relax.nn.relu"]
    lowered = LowerByName(mod).transform()
    assert len(lowered.prim_funcs()) == 1  # the relu found its lowering by name
    xv = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(np.asarray(mlc.build(lowered)["main"](xv)), np.maximum(xv, 0))


def test_onnx_takes_converters_in_the_same_style() -> None:
    onnx = pytest.importorskip("onnx", reason="onnx is not installed (optional extra)")
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], ["h"]),
             helper.make_node("Exp", ["h"], ["y"], name="the_exp")]
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    model = helper.make_model(helper.make_graph(nodes, "g", [x_info], [y_info]))
    if "Exp" not in str(graph.frontend.onnx.SUPPORTED):
        with pytest.raises(GraphError, match=r"convert_map=\{'Exp': lambda bb, node_map, node"):
            graph.from_onnx(model)
    g = graph.from_onnx(model, convert_map={
        "Exp": lambda bb, node_map, node: bb.emit(graph.exp(node_map[node.input[0]]))})
    xv = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(graph.build(g)(x=xv)[0], np.exp(np.maximum(xv, 0)), rtol=1e-5)
    _ = onnx
