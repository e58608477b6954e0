"""The pipeline: the pass list, tracing, verification, and whole programs against numpy."""

import numpy as np
import pytest
from lowering_helpers import check_lowered, eval_prim_func

from mlc import te, tir
from mlc.errors import LoweringError
from mlc.tir.expr import Ramp
from mlc.tir.functor import post_order_visit
from mlc.transform import PASSES, lower
from mlc.transform.pipeline import PASSES as PIPELINE_PASSES


def _nodes(func, cls):
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, cls) else None)
    return found


def _add_one(n=16):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    return te.create_prim_func([A, B])


def test_passes_are_one_visible_list():
    assert PASSES is PIPELINE_PASSES
    names = [name for name, _ in PASSES]
    assert names[:7] == [
        "check_bounds", "lower_cross_thread_reduction", "lower_blocks", "reroll_sums",
        "compact_buffers", "flatten_buffers", "simplify",
    ]
    assert "vectorize_loops" in names and "unroll_loops" in names
    assert all(callable(fn) for _, fn in PASSES)


def test_trace_prints_the_program_after_each_pass(monkeypatch, capsys):
    monkeypatch.setenv("MLC_TRACE", "1")
    lower(_add_one())
    out = capsys.readouterr().out
    for name, _ in PASSES:
        assert f"== after {name} ==" in out
    assert "with block" in out and "B[i] = A[i] + 1.0" in out
    lower(_add_one(), trace=False)
    assert capsys.readouterr().out == ""


def test_a_broken_pass_is_reported_by_the_verifier(monkeypatch):
    from mlc.tir.expr import Var
    from mlc.tir.stmt import BufferStore
    from mlc.transform import pipeline

    def breaks(func):  # stores to an index that uses an undefined variable
        store = _nodes(func, BufferStore)[0]
        return func.with_body(BufferStore(store.buffer, store.value, (Var("ghost"),)))

    monkeypatch.setattr(pipeline, "PASSES", [*PASSES, ("breaks", breaks)])
    with pytest.raises(LoweringError, match="after the lowering pass 'breaks'"):
        lower(_add_one(), verify=True)


def test_lower_refuses_what_is_not_a_prim_func():
    with pytest.raises(LoweringError, match="expects a PrimFunc"):
        lower("main")


def _schedule(n):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: te.exp(A[i]) * 2.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, i1, i2 = sch.split(i, factors=[None, 4, 8])
    sch.parallel(i0)
    sch.vectorize(i2)
    return sch.mod


@pytest.mark.parametrize("n", [1000, 64, 5])
def test_scheduled_elementwise_with_tail(n):
    func = _schedule(n)
    lowered = lower(func)
    check_lowered(lowered)
    # with n = 5 no vector of 8 is ever full: the simplifier drops the vector branch
    assert bool(_nodes(lowered, Ramp)) == (n >= 8)
    a = np.random.rand(n).astype("float32")
    for f in (func, lowered):
        b = np.zeros(n, "float32")
        eval_prim_func(f, a, b)
        np.testing.assert_allclose(b, np.exp(a) * 2.0, rtol=1e-6)


def test_symbolic_shape_matmul_with_intermediate():
    n = te.var("n")
    k = te.reduce_axis((0, 8), name="k")
    X = te.placeholder((n, 8), name="X")
    W = te.placeholder((8, 6), name="W")
    Y = te.compute((n, 6), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    Z = te.compute((n, 6), lambda i, j: Y[i, j] + 1.0, name="Z")
    func = te.create_prim_func([X, W, Z])
    lowered = lower(func)
    check_lowered(lowered)
    x = np.random.rand(3, 8).astype("float32")
    w = np.random.rand(8, 6).astype("float32")
    z = np.zeros((3, 6), "float32")
    eval_prim_func(lowered, x, w, z)
    np.testing.assert_allclose(z, x @ w + 1.0, rtol=1e-5)
