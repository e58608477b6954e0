"""Graph construction, type inference errors, the text form and DOT, the passes and the
reference executor."""

from __future__ import annotations

import numpy as np
import pytest

from mlc import graph
from mlc.errors import GraphError

RNG = np.random.default_rng(2)


def arr(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def test_shapes_inferred_and_operators() -> None:
    x = graph.var("x", (2, 3))
    y = (x * 2.0 + graph.const(arr(3))) / 4.0 - x
    assert y.shape == (2, 3) and y.dtype == "float32"
    assert graph.nn.conv2d(graph.var("im", (1, 3, 9, 9)), graph.const(arr(8, 3, 3, 3)),
                           strides=2, padding=1).shape == (1, 8, 5, 5)
    assert graph.nn.max_pool2d(graph.var("p", (1, 2, 7, 7)), 2).shape == (1, 2, 3, 3)
    assert graph.sum(graph.var("s", (2, 3, 4)), axis=(0, 2), keepdims=True).shape == (1, 3, 1)
    assert graph.reshape(graph.var("r", (2, 6)), (3, -1)).shape == (3, 4)


def test_mismatch_names_both_operands() -> None:
    x = graph.var("x", (4, 3))
    with pytest.raises(GraphError, match=r"add\(%x of shape \(4, 3\), a constant of shape "
                                         r"\(4,\)\).*do not broadcast"):
        _ = x + graph.const(arr(4))
    with pytest.raises(GraphError, match=r"nn.dense\(%x of shape \(4, 3\), const W of shape "
                                         r"\(5, 7\)\).*last axis of x \(3\)"):
        graph.nn.dense(x, graph.const(arr(5, 7), name="W"))
    with pytest.raises(GraphError, match="cannot reshape"):
        graph.reshape(x, (5, 2))


def test_graph_checks_inputs() -> None:
    x, y = graph.var("x", (2,)), graph.var("y", (2,))
    with pytest.raises(GraphError, match=r"\['y'\].*not listed"):
        graph.Graph([x], [x + y])
    g = graph.Graph([x, y], [x + y])
    with pytest.raises(GraphError, match="missing input 'y'"):
        graph.evaluate(g, x=np.ones(2, "float32"))
    with pytest.raises(GraphError, match=r"must have shape \(2,\)"):
        graph.evaluate(g, x=np.ones(3, "float32"), y=np.ones(2, "float32"))


def test_text_form_one_line_per_node() -> None:
    x = graph.var("x", (1, 128))
    w = graph.const(arr(10, 128), name="w")
    g = graph.Graph([x], [graph.nn.relu(graph.nn.dense(x, w))])
    text = str(g)
    assert "graph(%x: (1, 128) float32) {" in text
    assert "%0 = nn.dense(%x, %w) : (1, 10) float32" in text
    assert "%1 = nn.relu(%0) : (1, 10) float32" in text
    assert text.strip().endswith("return %1\n}")
    fused = graph.fuse_ops(g)
    assert "# group 0, OUT_ELEMWISE_FUSABLE" in str(fused)


def test_dot_has_groups_and_attributes() -> None:
    x = graph.var("x", (1, 8))
    g = graph.fuse_ops(graph.Graph([x], [graph.nn.relu(graph.nn.dense(x, graph.const(arr(4, 8))))
                                         * 3.0]))
    dot = g.to_dot()
    assert dot.startswith('digraph "mlc_graph" {')
    assert "subgraph cluster_0" in dot
    assert 'op="nn.dense"' in dot and "pattern=OUT_ELEMWISE_FUSABLE" in dot and "group=0" in dot
    graphviz = pytest.importorskip("graphviz")
    try:
        svg = graphviz.Source(dot).pipe("svg")
    except graphviz.ExecutableNotFound:
        pytest.skip("the dot binary is not installed")
    assert b"<svg" in svg


def test_fold_constant_and_cse_and_dce() -> None:
    x = graph.var("x", (3,))
    a = graph.const(np.ones(3, "float32"))
    folded = graph.exp(a) * 2.0            # all-constant: folds to one constant
    r1, r2 = graph.nn.relu(x), graph.nn.relu(x)
    unused = graph.tanh(x)                 # noqa: F841 - dead
    g = graph.Graph([x], [r1 + r2 + folded])
    g1 = graph.fold_constant(g)
    assert [n.op.name for n in g1.calls()] == ["nn.relu", "nn.relu", "add", "add"]
    g2 = graph.eliminate_common_subexpr(g1)
    assert [n.op.name for n in g2.calls()] == ["nn.relu", "add", "add"]
    xv = arr(3)
    expected = 2 * np.maximum(xv, 0) + 2 * np.e
    np.testing.assert_allclose(graph.evaluate(g2, x=xv)[0], expected, rtol=1e-6)
    g3 = graph.eliminate_dead_code(graph.Graph([x], [graph.reshape(x, (3,)) + 1.0]))
    assert [n.op.name for n in g3.calls()] == ["add"]


def test_layout_pass_packs_dense_weights() -> None:
    x = graph.var("x", (2, 20))
    w = arr(32, 20)
    g = graph.Graph([x], [graph.nn.dense(x, graph.const(w))])
    opt = graph.optimize(g)
    (call,) = opt.calls()
    assert call.op.name == "nn.dense_pack"
    assert call.args[1].shape == (1, 20, 32)  # 32 outputs a block (pick_block)
    xv = arr(2, 20)
    np.testing.assert_allclose(graph.evaluate(opt, x=xv)[0], xv @ w.T, rtol=1e-5, atol=1e-5)


def test_optimize_levels_keep_results() -> None:
    x = graph.var("x", (1, 3, 6, 6))
    y = graph.nn.conv2d(x, graph.const(arr(4, 3, 3, 3)), padding=1)
    y = graph.nn.batch_norm(y, graph.const(arr(4)), graph.const(arr(4)), graph.const(arr(4)),
                            graph.const(np.abs(arr(4)) + 1))
    y = graph.nn.max_pool2d(graph.nn.relu(y), 2)
    y = graph.nn.softmax(graph.nn.dense(graph.nn.batch_flatten(y), graph.const(arr(5, 36))))
    g = graph.Graph([x], [y])
    xv = arr(1, 3, 6, 6)
    ref = graph.evaluate(g, x=xv)[0]
    for level in (0, 1, 2):
        np.testing.assert_allclose(graph.evaluate(graph.optimize(g, level=level), x=xv)[0], ref,
                                   rtol=1e-5, atol=1e-6)


def test_memory_plan_reuses_dead_buffers() -> None:
    x = graph.var("x", (64,))
    y = x
    for op in (graph.exp, graph.tanh, graph.sort, graph.exp, graph.sort, graph.tanh):
        y = op(y)
    g = graph.plan_memory(graph.fuse_ops(graph.Graph([x], [y])))
    plan = g.memory
    assert plan is not None
    # groups: [exp,tanh] [sort] [exp] [sort] [tanh]: four intermediates, two live at a time
    assert plan.bytes_before == 4 * 64 * 4
    assert plan.bytes_after == 2 * 64 * 4
    for grp in g.groups:      # no kernel writes a buffer it reads
        if grp.root in plan.storage:
            assert all(plan.storage.get(a) != plan.storage[grp.root] for a in grp.inputs())


def test_numpy_executor_api() -> None:
    x = graph.var("x", (2, 4))
    g = graph.optimize(graph.Graph([x], [graph.nn.relu(x) * 2.0, graph.sort(x)]))
    mod = graph.build(g, target="numpy")
    xv = arr(2, 4)
    mod.set_input(x=xv)
    mod.run()
    np.testing.assert_allclose(mod.get_output(0), np.maximum(xv, 0) * 2)
    np.testing.assert_allclose(mod.get_output(1), np.sort(xv, axis=-1))
    mod.set_input("x", xv + 1)
    out = mod(x=xv + 1)
    np.testing.assert_allclose(out[0], np.maximum(xv + 1, 0) * 2)
    with pytest.raises(GraphError, match="no input 'y'"):
        mod.set_input(y=xv)
    with pytest.raises(GraphError, match="output 2 does not exist"):
        mod.get_output(2)
