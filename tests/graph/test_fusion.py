"""Fusion decisions on named patterns (TVM's rules), and the post-dominator tree."""

from __future__ import annotations

import numpy as np

from mlc import graph
from mlc.graph import OpPattern

RNG = np.random.default_rng(1)


def c(*shape: int) -> graph.Constant:
    return graph.const(RNG.standard_normal(shape).astype("float32"))


def groups_of(g: graph.Graph) -> list[list[str]]:
    fused = graph.fuse_ops(g)
    assert fused.groups is not None
    return [[n.op.name for n in grp.nodes] for grp in fused.groups]


def test_dense_bias_relu_is_one_group() -> None:
    x = graph.var("x", (4, 16))
    y = graph.nn.relu(graph.nn.bias_add(graph.nn.dense(x, c(8, 16)), c(8)))
    fused = graph.fuse_ops(graph.Graph([x], [y]))
    assert [[n.op.name for n in g.nodes] for g in fused.groups] == [
        ["nn.dense", "nn.bias_add", "nn.relu"]]
    grp = fused.groups[0]
    assert grp.anchor.op.name == "nn.dense"
    assert grp.pattern == OpPattern.OUT_ELEMWISE_FUSABLE


def test_conv_batchnorm_relu_is_one_group() -> None:
    x = graph.var("x", (1, 3, 8, 8))
    y = graph.nn.conv2d(x, c(4, 3, 3, 3), padding=1)
    y = graph.nn.batch_norm(y, c(4), c(4), c(4), graph.const(np.ones(4, "float32")))
    y = graph.nn.relu(y)
    g = graph.Graph([x], [y])
    assert groups_of(g) == [["nn.conv2d", "nn.batch_norm", "nn.relu"]]
    # after simplify_inference + folding the batch norm is a multiply and an add: still fused
    opt = graph.optimize(g)
    assert [[n.op.name for n in grp.nodes] for grp in opt.groups] == [
        ["nn.conv2d", "multiply", "add", "nn.relu"]]


def test_two_reductions_in_a_row_are_two_groups() -> None:
    x = graph.var("x", (4, 5, 6))
    y = graph.sum(graph.exp(x), axis=2)
    z = graph.max(y, axis=1)
    assert groups_of(graph.Graph([x], [z])) == [["exp", "sum"], ["max"]]


def test_diamond_meets_in_add() -> None:
    x = graph.var("x", (8, 8))
    d = graph.nn.dense(x, c(8, 8))
    left = graph.nn.relu(d)
    right = graph.sigmoid(d)
    y = left + right
    # both branches are elementwise: the dense absorbs the whole diamond
    assert groups_of(graph.Graph([x], [y])) == [
        ["nn.dense", "nn.relu", "sigmoid", "add"]]


def test_diamond_with_injective_branch_splits() -> None:
    x = graph.var("x", (8, 8))
    d = graph.nn.dense(x, c(8, 8))
    y = graph.nn.relu(d) + graph.transpose(d)
    # a transpose on a branch is not elementwise: the dense stays alone, the rest fuses
    assert groups_of(graph.Graph([x], [y])) == [["nn.dense"], ["nn.relu", "transpose", "add"]]


def test_opaque_op_never_fuses() -> None:
    x = graph.var("x", (4, 6))
    y = graph.exp(graph.sort(graph.nn.relu(x), axis=1)) + 1.0
    assert groups_of(graph.Graph([x], [y])) == [["nn.relu"], ["sort"], ["exp", "add"]]


def test_output_used_twice_is_not_fused_away() -> None:
    x = graph.var("x", (4, 6))
    a = graph.exp(x)
    b = graph.nn.relu(a)
    # a is a graph output: it must be materialised, so it ends its group
    assert groups_of(graph.Graph([x], [a, b])) == [["exp"], ["nn.relu"]]


def test_dense_does_not_absorb_a_producer_or_second_dense() -> None:
    x = graph.var("x", (2, 8))
    h = graph.nn.relu(graph.nn.dense(graph.tanh(x), c(8, 8)))
    y = graph.nn.dense(h, c(3, 8))
    assert groups_of(graph.Graph([x], [y])) == [["tanh"], ["nn.dense", "nn.relu"], ["nn.dense"]]


def test_injective_chain_fuses() -> None:
    x = graph.var("x", (2, 3, 4))
    y = graph.transpose(graph.reshape(x, (6, 4)), (1, 0)) * 2.0
    assert groups_of(graph.Graph([x], [y])) == [["reshape", "transpose", "multiply"]]


def test_group_size_limit() -> None:
    x = graph.var("x", (4,))
    y = x
    for _ in range(10):
        y = graph.exp(y)
    g = graph.fuse_ops(graph.Graph([x], [y]), max_depth=4)
    sizes = [len(grp.nodes) for grp in g.groups]
    assert sum(sizes) == 10 and max(sizes) <= 4 and len(sizes) >= 3


def test_unfused_baseline_has_one_group_per_op() -> None:
    x = graph.var("x", (4, 16))
    y = graph.nn.relu(graph.nn.bias_add(graph.nn.dense(x, c(8, 16)), c(8)))
    g = graph.fuse_ops(graph.Graph([x], [y]), enabled=False)
    assert [len(grp.nodes) for grp in g.groups] == [1, 1, 1]


def test_post_dominator_tree() -> None:
    x = graph.var("x", (8,))
    a = graph.exp(x)
    b = graph.nn.relu(a)
    cc = graph.tanh(a)
    d = b + cc
    tree = graph.PostDomTree(graph.Graph([x], [d]))
    assert tree.parent[a] is d
    assert tree.parent[b] is d and tree.parent[cc] is d
    assert tree.parent[d] is None


def test_mlp_groups_and_memory_plan() -> None:
    x = graph.var("x", (1, 64))
    h = x
    for units in (32, 32, 32, 10):
        h = graph.nn.relu(graph.nn.dense(h, c(units, h.shape[1])) + c(units))
    g = graph.optimize(graph.Graph([x], [graph.nn.softmax(h)]))
    assert len(g.groups) == 5
    assert g.memory is not None
    # four intermediates of 32/32/32/10 floats, alive two at a time: two buffers suffice
    assert g.memory.bytes_before == (32 + 32 + 32 + 10) * 4
    assert len(g.memory.sizes) == 2
    assert g.memory.bytes_after < g.memory.bytes_before
