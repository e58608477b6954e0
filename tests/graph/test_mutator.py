"""The course's graph rewrites, typed as in the notes (``tvm.`` -> ``mlc.``): the
EwiseFMARewriter, the map_dense/map_add/map_relu lowering with call_te, from_fx with call
maps, and the graph <-> IRModule bridge (fusion applies)."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import mlc
from mlc import graph, topi
from mlc.errors import GraphError
from mlc.graph import relax
from mlc.script import R, T, ir_module

RNG = np.random.default_rng(3)


@ir_module
class MyModule:
    @R.function
    def main(x: R.Tensor((3, 4), "float32"), y: R.Tensor((3, 4), "float32")):
        with R.dataflow():
            lv0 = R.multiply(x, y)
            gv0 = R.add(lv0, y)
            R.output(gv0)
        return gv0


@relax.expr_functor.mutator
class EwiseFMARewriter(relax.PyExprMutator):
    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)
        add_op = relax.Op.get("relax.add")
        multiply_op = relax.Op.get("relax.multiply")
        ewise_fma_op = relax.Op.get("relax.ewise_fma")

        if call.op != add_op:
            return call

        value = self.lookup_binding(call.args[0])
        if not isinstance(value, relax.Call) or value.op != multiply_op:
            return call

        fma_call = relax.Call(
            ewise_fma_op, [value.args[0], value.args[1], call.args[1]], None, None
        )
        return fma_call


def test_ewise_fma_rewriter_as_in_the_notes() -> None:
    updated_fn = EwiseFMARewriter().visit_expr(MyModule["main"])
    ops = [b.value.op.name for b in updated_fn.bindings()]
    assert ops == ["relax.multiply", "relax.ewise_fma"]  # the rewrite leaves lv0 in the code
    assert [b.value.op.short_name for b in updated_fn.bindings()] == ["multiply", "ewise_fma"]
    text = updated_fn.script()
    assert "gv0: R.Tensor((3, 4), \"float32\") = R.ewise_fma(x, y, y)" in text
    cleaned = relax.analysis.remove_all_unused(updated_fn)
    assert [b.value.op.name for b in cleaned.bindings()] == ["relax.ewise_fma"]
    x, y = RNG.random((3, 4), dtype=np.float32), RNG.random((3, 4), dtype=np.float32)
    mod = relax.from_graph(relax.to_graph(cleaned))
    out = mlc.build(mod, target="llvm")["main"](x, y)
    np.testing.assert_allclose(out, x * y + y, rtol=1e-6)


def test_rewriter_leaves_other_calls_alone() -> None:
    @ir_module
    class M:
        @R.function
        def main(x: R.Tensor((2, 2), "float32"), y: R.Tensor((2, 2), "float32")):
            with R.dataflow():
                lv0 = R.add(x, y)
                gv0 = R.multiply(lv0, y)
                R.output(gv0)
            return gv0

    updated = EwiseFMARewriter().visit_expr(M["main"])
    assert [b.value.op.name for b in updated.bindings()] == ["relax.add", "relax.multiply"]


@relax.expr_functor.mutator
class LowerToTensorIR(relax.PyExprMutator):
    def __init__(self, mod, op_map) -> None:
        super().__init__()
        self.mod_ = mod
        self.op_map = {relax.Op.get(k): v for k, v in op_map.items()}

    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)
        if call.op in self.op_map:
            return self.op_map[call.op](self.builder_, call)
        return call

    def transform(self):
        for global_var, func in self.mod_.functions.items():
            if not isinstance(func, relax.Function):
                continue
            updated_func = self.visit_expr(func)
            self.builder_.update_func(global_var, updated_func)
        return self.builder_.get()


def map_dense(bb, call):
    x, w = call.args
    return bb.call_te(topi.nn.dense, x, w)


def map_add(bb, call):
    a, b = call.args
    return bb.call_te(topi.add, a, b)


def map_relu(bb, call):
    return bb.call_te(topi.nn.relu, call.args[0])


op_map = {
    "relax.nn.dense": map_dense,
    "relax.add": map_add,
    "relax.nn.relu": map_relu,
}


def _mlp_graph_module():
    w0 = RNG.standard_normal((16, 12)).astype("float32")
    b0 = RNG.standard_normal(16).astype("float32")
    w1 = RNG.standard_normal((5, 16)).astype("float32")
    x = graph.var("x", shape=(1, 12))
    h = graph.nn.relu(graph.nn.dense(x, graph.const(w0, name="w0")) + graph.const(b0, name="b0"))
    g = graph.Graph([x], [graph.nn.dense(h, graph.const(w1, name="w1"))])
    ref = lambda a: np.maximum(a @ w0.T + b0, 0) @ w1.T  # noqa: E731
    return relax.from_graph(g), ref


def test_lower_to_tensor_ir_with_call_te() -> None:
    mod, ref = _mlp_graph_module()
    lowered = LowerToTensorIR(mod, op_map).transform()
    calls = [b.value for b in lowered["main"].bindings()]
    assert all(c.op is relax.CALL_TIR for c in calls)
    assert sorted(lowered.prim_funcs()) == ["add", "dense", "dense1", "relu"]
    assert "R.call_tir(dense, (x, metadata[\"w0\"])" in lowered["main"].script()
    x = RNG.random((1, 12), dtype=np.float32)
    out = mlc.build(lowered, target="llvm")["main"](x)
    np.testing.assert_allclose(out, ref(x), rtol=1e-4, atol=1e-4)


def test_graph_round_trip_and_fusion() -> None:
    mod, ref = _mlp_graph_module()
    g = relax.to_graph(mod)
    assert [n.op.name for n in g.calls()] == ["nn.dense", "add", "nn.relu", "nn.dense"]
    fused = relax.optimize(mod)
    kernels = fused.prim_funcs()
    assert len(kernels) == 2  # dense+add+relu, dense
    assert any("dense" in k and k.endswith("add_relu") for k in kernels)
    x = RNG.random((1, 12), dtype=np.float32)
    for m in (mod, fused):
        np.testing.assert_allclose(mlc.build(m)["main"](x), ref(x), rtol=1e-4, atol=1e-4)


def test_call_tir_functions_do_not_become_graphs() -> None:
    mod, _ = _mlp_graph_module()
    lowered = LowerToTensorIR(mod, op_map).transform()
    with pytest.raises(GraphError, match="call_tir"):
        relax.to_graph(lowered)


def test_visit_call_must_return_a_value() -> None:
    class Bad(relax.PyExprMutator):
        def visit_call_(self, call):
            return 3

    with pytest.raises(GraphError, match="visit_call_ must return"):
        Bad().visit_expr(MyModule["main"])


def test_from_fx_with_call_maps() -> None:
    torch = pytest.importorskip("torch")
    from torch import fx, nn

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear0 = nn.Linear(12, 8)
            self.relu = nn.ReLU()
            self.linear1 = nn.Linear(8, 3)

        def forward(self, x):
            return self.linear1(self.relu(self.linear0(x)))

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.randn(12, 6))

        def forward(self, x):
            return torch.relu(torch.matmul(x, self.weight) + 1.0)

    def map_nn_linear_op(bb, node_map, node, nn_mod):
        x = node_map[node.args[0]]
        w = relax.map_param(nn_mod.weight)
        y = bb.emit(relax.op.nn.dense(x, w))
        if nn_mod.bias is not None:
            y = bb.emit(relax.op.add(y, relax.map_param(nn_mod.bias)))
        return y

    def map_nn_relu_op(bb, node_map, node, nn_mod):
        return bb.emit(relax.op.nn.relu(node_map[node.args[0]]))

    model = MLP()
    mod = relax.from_fx(fx.symbolic_trace(model), input_shapes=[(1, 12)],
                        call_function_map={},
                        call_module_map={nn.Linear: map_nn_linear_op, nn.ReLU: map_nn_relu_op})
    x = np.random.default_rng(0).random((1, 12), dtype=np.float32)
    expected = model(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(mlc.build(mod)["main"](x), expected, rtol=1e-4, atol=1e-5)

    def te_matmul(A, B):
        from mlc import te

        k = te.reduce_axis((0, A.shape[1]), name="k")
        return te.compute((A.shape[0], B.shape[1]),
                          lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")

    def map_matmul(bb, node_map, node):
        return bb.emit_te(te_matmul, node_map[node.args[0]], node_map[node.args[1]])

    def map_add(bb, node_map, node):
        return bb.emit(relax.op.add(node_map[node.args[0]], relax.const(node.args[1])))

    def map_relu(bb, node_map, node):
        return bb.emit_te(topi.nn.relu, node_map[node.args[0]])

    net = Net()
    mod2 = relax.from_fx(fx.symbolic_trace(net), input_shapes=[(2, 12)],
                         call_function_map={torch.matmul: map_matmul, operator.add: map_add,
                                            torch.relu: map_relu},
                         call_module_map={})
    assert "te_matmul" in mod2.prim_funcs()
    x2 = np.random.default_rng(1).random((2, 12), dtype=np.float32)
    expected2 = net(torch.from_numpy(x2)).detach().numpy()
    np.testing.assert_allclose(mlc.build(mod2)["main"](x2), expected2, rtol=1e-4, atol=1e-5)
    # without maps the shared default converters apply (issue 27); an op with none names
    # the map to extend
    mod3 = relax.from_fx(fx.symbolic_trace(net), [(2, 12)], call_function_map={})
    np.testing.assert_allclose(mlc.build(mod3)["main"](x2), expected2, rtol=1e-4, atol=1e-5)

    class Cum(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, 1)

    with pytest.raises(GraphError, match="call_function_map"):
        relax.from_fx(fx.symbolic_trace(Cum()), [(2, 12)], call_function_map={})


def test_prim_funcs_and_graph_functions_share_a_module() -> None:
    @ir_module
    class M:
        @T.prim_func
        def double(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
            for i in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(4, i)
                    B[vi] = A[vi] * 2.0

        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                lv = R.call_tir(double, (x,), out_sinfo=R.Tensor((4,), "float32"))  # noqa: F821
                gv = R.nn.relu(lv)
                R.output(gv)
            return gv

    x = np.array([-1, 2, -3, 4], "float32")
    ex = mlc.build(M, target="llvm")
    np.testing.assert_allclose(ex["main"](x), np.maximum(2 * x, 0))
    out = np.empty(4, "float32")
    ex["double"](x, out)
    np.testing.assert_allclose(out, 2 * x)
