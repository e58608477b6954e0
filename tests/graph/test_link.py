"""graph.build links every group into ONE function: one native call per inference."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mlc import graph
from mlc.graph.link import substitute_buffers
from mlc.tir.stmt import Allocate, Buffer, BufferStore, SeqStmt

RNG = np.random.default_rng(7)


def arr(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype("float32")


def c(*shape: int) -> graph.Constant:
    return graph.const(arr(*shape, scale=0.3))


def top_allocations(func: object) -> list[Buffer]:
    """The Allocate statements wrapped around the linked function's body, outermost first."""
    out = []
    body = func.body  # type: ignore[attr-defined]
    while isinstance(body, Allocate):
        out.append(body.buffer)
        body = body.body
    return out


def mlp(batch: int) -> tuple[graph.Graph, list[np.ndarray]]:
    w1, b1, w2, b2 = arr(32, 64, scale=0.2), arr(32), arr(10, 32, scale=0.2), arr(10)
    x = graph.var("x", (batch, 64))
    h = graph.nn.relu(graph.nn.dense(x, graph.const(w1)) + graph.const(b1))
    y = graph.nn.dense(h, graph.const(w2)) + graph.const(b2)
    return graph.Graph([x], [y]), [w1, b1, w2, b2]


@pytest.mark.parametrize("batch", [1, 5])
def test_mlp_is_one_function_with_one_entry(batch: int) -> None:
    g, (w1, b1, w2, b2) = mlp(batch)
    mod = graph.build(graph.optimize(g))
    assert len(mod.kernels) == 2 and mod.num_native_calls == 1
    # one function: params are the input, the (packed) constants, then the output
    names = [p.name for p in mod.prim_func.params]
    assert names[0] == "x" and names[-1] == "out0" and len(names) == 6
    ll = mod.module.get_source("ll")
    exported = [d for d in re.findall(r"^define (.*)$", ll, re.M) if "internal" not in d]
    assert len(exported) == 1 and "@graph(" in exported[0]
    xv = arr(batch, 64)
    want = np.maximum(xv @ w1.T + b1, 0) @ w2.T + b2
    np.testing.assert_allclose(mod(x=xv)[0], want, rtol=1e-4, atol=1e-4)
    mod.set_input(x=xv + 1)
    mod.run()
    want = np.maximum((xv + 1) @ w1.T + b1, 0) @ w2.T + b2
    np.testing.assert_allclose(mod.get_output(0), want, rtol=1e-4, atol=1e-4)
    # float64 input is converted on the way in (the slow path of the same call)
    np.testing.assert_allclose(mod(x=xv.astype("float64") + 1)[0], want, rtol=1e-4, atol=1e-4)
    # the per-group path still works and agrees
    report = mod.debug_run(x=xv)
    assert [name.split()[2] for name, _ in report] == [k.name for k in mod.kernels]


def test_intermediates_share_storage_as_planned() -> None:
    # an unfused chain: each intermediate dies after the next op, so two storages suffice;
    # the shapes differ, so each shared storage is sized for its largest user
    x = graph.var("x", (4, 6))
    a = graph.exp(x)                                  # (4, 6)
    b = graph.sum(a, axis=1, keepdims=True)           # (4, 1)
    d = graph.nn.relu(a - b)                          # (4, 6)
    e = graph.tanh(d)                                 # (4, 6)
    f = graph.sigmoid(graph.transpose(e, (1, 0)))     # (6, 4)
    g = graph.optimize(graph.Graph([x], [f]), level=0)
    plan = g.memory
    assert plan is not None and len(plan.sizes) < len(plan.storage)
    mod = graph.build(g)
    allocs = top_allocations(mod.prim_func)
    assert len(allocs) == len(plan.sizes)
    assert sorted(int(b.shape[0]) * 4 for b in allocs) == sorted(plan.sizes)
    xv = arr(4, 6)
    np.testing.assert_allclose(mod(x=xv)[0], graph.evaluate(g, x=xv)[0], rtol=1e-5,
                               atol=1e-6)


def test_diamond_and_two_outputs_one_call() -> None:
    x = graph.var("x", (8, 8))
    d = graph.nn.dense(x, c(8, 8))
    y = graph.nn.relu(d) + graph.transpose(d)
    z = graph.sum(y, axis=0)
    g = graph.Graph([x], [z, y, x])
    mod = graph.build(graph.optimize(g))
    assert mod.num_native_calls == 1
    xv = arr(8, 8)
    for want, got in zip(graph.evaluate(g, x=xv), mod(x=xv)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_convnet_one_call_matches_unfused() -> None:
    x = graph.var("x", (2, 1, 8, 8))
    y = graph.nn.conv2d(x, c(4, 1, 3, 3), padding=1)
    y = graph.nn.max_pool2d(graph.nn.relu(y), 2)
    y = graph.nn.dense(graph.nn.batch_flatten(y), c(3, 64))
    g = graph.Graph([x], [y])
    xv = arr(2, 1, 8, 8)
    want = graph.evaluate(g, x=xv)[0]
    for level in (0, 2):
        mod = graph.build(graph.optimize(g, level=level))
        assert mod.num_native_calls == 1
        np.testing.assert_allclose(mod(x=xv)[0], want, rtol=1e-4, atol=1e-4)


def test_graph_with_numpy_only_op_runs_group_by_group() -> None:
    x = graph.var("x", (3, 4))
    g = graph.optimize(graph.Graph([x], [graph.exp(graph.sort(x, axis=1))]))
    mod = graph.build(g)
    assert mod.module is None and mod.prim_func is None
    assert "group by group" in mod.summary()
    xv = arr(3, 4)
    np.testing.assert_allclose(mod(x=xv)[0], np.exp(np.sort(xv, axis=1)), rtol=1e-5)


def test_substitute_buffers_replaces_loads_and_stores_by_data() -> None:
    a, b, out = Buffer("a", (4,)), Buffer("b", (4,)), Buffer("out", (4,))
    stmt = SeqStmt((BufferStore(out, a[0] + 1.0, (a[1],)), BufferStore(a, b[2], (a[3],))))
    new = Buffer("n", (8,), data=Buffer("storage", (8,)).data)
    got = substitute_buffers(stmt, {a.data: new})
    assert str(got) == str(SeqStmt((BufferStore(out, new[0] + 1.0, (new[1],)),
                                    BufferStore(new, b[2], (new[3],)))))
    assert got.seq[1].buffer is new and got.seq[0].value.a.buffer is new


def test_module_bind_checks_once_and_keeps_arrays_alive() -> None:
    import mlc
    from mlc import te
    from mlc.errors import ArgumentError

    a = te.placeholder((4,), name="A")
    b = te.compute((4,), lambda i: a[i] * 2.0, name="B")
    f = mlc.build(te.create_schedule(b.op), [a, b])
    x, y = np.arange(4, dtype="float32"), np.zeros(4, "float32")
    run = f.bind(x, y)
    del x
    run()
    np.testing.assert_allclose(y, [0, 2, 4, 6])
    with pytest.raises(ArgumentError):   # the check happens at bind time
        f.bind(np.zeros(3, "float32"), y)
