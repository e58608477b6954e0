"""alter_op_layout: a constant matmul weight ([in, units], ONNX MatMul + Add) is transposed and
packed at compile time, so it builds the same dense_pack kernel as nn.dense (issue 30)."""

from __future__ import annotations

import numpy as np
import pytest

from mlc import graph
from mlc.graph import ir
from mlc.graph.ops import nn as gnn
from mlc.graph.ops import tensor as gt


def _mlp(spelling: str, batch: int, sizes: tuple[int, ...] = (784, 256, 128, 10),
         seed: int = 0) -> tuple[ir.Graph, list[tuple[np.ndarray, np.ndarray]]]:
    rng = np.random.default_rng(seed)
    x = ir.var("x", (batch, sizes[0]), "float32")
    h: ir.Node = x
    params = []
    for k, (i, o) in enumerate(zip(sizes, sizes[1:])):
        w = (rng.standard_normal((o, i)) * 0.05).astype("float32")
        b = (rng.standard_normal(o) * 0.1).astype("float32")
        params.append((w, b))
        if spelling == "dense":
            h = gnn.dense(h, ir.const(w, name=f"w{k}"))
        else:
            h = gnn.matmul(h, ir.const(np.ascontiguousarray(w.T), name=f"w{k}"))
        h = gt.add(h, ir.const(b, name=f"b{k}"))
        if k < len(sizes) - 2:
            h = gnn.relu(h)
    return ir.Graph([x], [h]), params


def _numpy(params: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> np.ndarray:
    for k, (w, b) in enumerate(params):
        x = x @ w.T + b
        if k < len(params) - 1:
            x = np.maximum(x, 0)
    return x


def test_constant_matmul_weight_becomes_dense_pack() -> None:
    g, _ = _mlp("matmul", 4)
    opt = graph.optimize(g)
    ops = {n.op.name for n in opt.calls()}
    assert "nn.matmul" not in ops
    assert "nn.dense_pack" in ops
    # the packed weight is a folded constant: (units / bn, in, bn), 64 outputs a block
    packed = [n.args[1] for n in opt.calls() if n.op.name == "nn.dense_pack"]
    assert all(isinstance(p, ir.Constant) for p in packed)
    assert [p.shape for p in packed] == [(4, 784, 64), (2, 256, 64), (1, 128, 10)]


@pytest.mark.parametrize("batch", [1, 3, 64])
@pytest.mark.parametrize("spelling", ["dense", "matmul"])
def test_both_spellings_compute_numpy(spelling: str, batch: int) -> None:
    g, params = _mlp(spelling, batch)
    mod = graph.build(graph.optimize(g), target="llvm")
    x = np.random.default_rng(1).random((batch, 784), dtype=np.float32)
    np.testing.assert_allclose(mod(x=x)[0], _numpy(params, x), rtol=1e-4, atol=1e-4)


def test_both_spellings_build_the_same_kernels() -> None:
    a = graph.build(graph.optimize(_mlp("dense", 8)[0]), target="llvm")
    b = graph.build(graph.optimize(_mlp("matmul", 8)[0]), target="llvm")
    assert [k.group.name for k in a.kernels] == [k.group.name for k in b.kernels]


def test_matmul_with_a_variable_weight_is_left_alone() -> None:
    a = ir.var("a", (4, 6), "float32")
    b = ir.var("b", (6, 5), "float32")
    opt = graph.optimize(ir.Graph([a, b], [gnn.matmul(a, b)]))
    assert [n.op.name for n in opt.calls()] == ["nn.matmul"]
    mod = graph.build(opt, target="llvm")
    rng = np.random.default_rng(2)
    av, bv = rng.random((4, 6), dtype=np.float32), rng.random((6, 5), dtype=np.float32)
    np.testing.assert_allclose(mod(a=av, b=bv)[0], av @ bv, rtol=1e-5)


@pytest.mark.parametrize("units", [1, 7, 13])
def test_matmul_with_units_no_block_divides(units: int) -> None:
    """7 and 13 outputs have no packing block: the weight is still transposed (dense)."""
    rng = np.random.default_rng(3)
    w = rng.random((9, units), dtype=np.float32)
    x = ir.var("x", (5, 9), "float32")
    opt = graph.optimize(ir.Graph([x], [gnn.matmul(x, ir.const(w, name="w"))]))
    assert "nn.matmul" not in {n.op.name for n in opt.calls()}
    xv = rng.random((5, 9), dtype=np.float32)
    np.testing.assert_allclose(graph.build(opt, target="llvm")(x=xv)[0], xv @ w, rtol=1e-5)


@pytest.mark.parametrize("units,bn", [(256, 64), (96, 32), (48, 16), (10, 10), (7, 7),
                                      (34, 0), (2, 2)])
def test_pick_block(units: int, bn: int) -> None:
    from mlc.graph.passes.layout import pick_block

    assert pick_block(units) == bn
