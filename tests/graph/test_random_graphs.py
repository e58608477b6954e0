"""Property: a random DAG of elementwise, broadcast, reduction and dense ops, optimized
(fusion included) and built with LLVM, computes what the numpy reference computes."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlc import graph

N, M = 6, 5   # every value is (N, M) or reduced to (N, 1) / (1, M) and broadcast back


@st.composite
def random_graphs(draw: st.DrawFn) -> tuple[graph.Graph, int]:
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    x = graph.var("x", (N, M))
    values: list[graph.Node] = [x]
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["unary", "binary", "bcast", "reduce", "dense"]))
        a = values[draw(st.integers(0, len(values) - 1))]
        if kind == "unary":
            op = draw(st.sampled_from([graph.nn.relu, graph.tanh, graph.sigmoid, graph.negative]))
            v = op(a)
        elif kind == "binary":
            b = values[draw(st.integers(0, len(values) - 1))]
            v = draw(st.sampled_from([graph.add, graph.multiply, graph.maximum,
                                      graph.subtract]))(a, b)
        elif kind == "bcast":
            shape = draw(st.sampled_from([(M,), (N, 1), (1, M)]))
            v = a * graph.const(rng.uniform(0.5, 1.5, shape).astype("float32"))
        elif kind == "reduce":
            axis = draw(st.integers(0, 1))
            red = draw(st.sampled_from([graph.sum, graph.max, graph.mean]))(
                a, axis=axis, keepdims=True)
            v = a - red       # broadcast back to (N, M)
        else:
            w = graph.const((rng.standard_normal((M, M)) * 0.4).astype("float32"))
            v = graph.nn.dense(a, w)
        values.append(v)
    outs = [values[-1]]
    if draw(st.booleans()) and len(values) > 2:
        outs.append(values[len(values) // 2])   # a second output in the middle of the DAG
    return graph.Graph([x], outs), seed


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(), st.sampled_from([0, 2]))
def test_random_graph_builds_and_matches_numpy(case: tuple[graph.Graph, int], level: int
                                               ) -> None:
    g, seed = case
    xv = np.random.default_rng(seed).standard_normal((N, M)).astype("float32")
    ref = graph.evaluate(g, x=xv)
    opt = graph.optimize(g, level=level)
    for r, o in zip(ref, graph.evaluate(opt, x=xv)):
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5)
    mod = graph.build(opt, target="llvm")
    assert mod.num_native_calls == 1   # the whole DAG is one compiled function
    for r, o in zip(ref, mod(x=xv)):
        np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-4)
