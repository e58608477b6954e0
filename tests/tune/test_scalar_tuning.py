"""Tuning a function with scalar parameters (``alpha: T.float32``, a te.var): the
measurement worker passes a number of the right type for each, in the call's order.
Before, every candidate failed on the missing arguments."""

from __future__ import annotations

import numpy as np

import mlc
from mlc import te, tune
from mlc.tune.measure import _random_inputs, _written_params


def _scaled_matmul(n: int = 32):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    alpha = te.var("alpha", "float32")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j] * alpha, axis=k), name="C")
    return te.create_prim_func([A, B, alpha, C])


def test_the_worker_makes_one_argument_per_parameter_in_call_order():
    func = _scaled_matmul()
    args = _random_inputs(func, seed=0)
    assert [type(a).__name__ for a in args] == ["ndarray", "ndarray", "float", "ndarray"]
    assert 0.5 <= args[2] < 1.5
    assert _written_params(func) == [3]  # C, after the scalar


def test_tune_tir_tunes_a_function_with_a_scalar_parameter():
    func = _scaled_matmul()
    best = tune.tune_tir(func, max_trials=4, tuner="random", progress=False)
    assert all(r.ok for r in best.tuner.results), [r.error for r in best.tuner.results]
    f = mlc.build(best.mod)
    rng = np.random.default_rng(1)
    a, b = rng.random((32, 32), dtype="float32"), rng.random((32, 32), dtype="float32")
    c = np.zeros((32, 32), "float32")
    f(a, b, 2.5, c)
    np.testing.assert_allclose(c, (a @ b) * 2.5, rtol=1e-4)
