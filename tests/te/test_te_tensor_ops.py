"""Issue 18 item 6, te side: whole-tensor arithmetic with broadcasting (d2l-tvm's batch
norm), an intermediate tensor as a build argument, get_block(func_name=), 3-axis tile."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import ScheduleError


def test_batch_norm_with_tensor_operators() -> None:
    n, c, h, w = 2, 3, 4, 5
    X = te.placeholder((n, c, h, w), name="X")
    Mean = te.placeholder((c, 1, 1), name="Mean")
    Var = te.placeholder((c, 1, 1), name="Var")
    Gamma = te.placeholder((c, 1, 1), name="Gamma")
    Beta = te.placeholder((c, 1, 1), name="Beta")
    C1 = X - Mean
    C2 = te.compute(Var.shape, lambda i, j, k: te.sqrt(Var[i, j, k] + 1e-5), name="C2")
    Y = C1 / C2 * Gamma + Beta
    assert [int(d) for d in Y.shape] == [n, c, h, w]
    s = te.create_schedule(Y.op)
    f = mlc.build(s, [X, Mean, Var, Gamma, Beta, Y], target="llvm")
    rng = np.random.default_rng(0)
    x = rng.random((n, c, h, w), "float32")
    mean, var, gamma, beta = (rng.random((c, 1, 1), "float32") for _ in range(4))
    y = np.empty((n, c, h, w), "float32")
    f(x, mean, var, gamma, beta, y)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-5) * gamma + beta, rtol=1e-5)


def test_scalar_operands_and_negation() -> None:
    A = te.placeholder((4,), name="A")
    B = 2.0 * A - 1.0
    C = -B / 4.0
    s = te.create_schedule(C.op)
    a = np.arange(4, dtype="float32")
    c = np.empty(4, "float32")
    mlc.build(s, [A, C], target="llvm")(a, c)
    np.testing.assert_allclose(c, -(2 * a - 1) / 4)


def test_intermediate_tensor_as_build_argument() -> None:
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2, name="B")
    C = te.compute((8,), lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    f = mlc.build(s, [A, B, C], target="llvm")
    a = np.arange(8, dtype="float32")
    b, c = np.empty(8, "float32"), np.empty(8, "float32")
    f(a, b, c)
    np.testing.assert_array_equal(b, a * 2)
    np.testing.assert_array_equal(c, a * 2 + 1)


def test_get_block_with_func_name() -> None:
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    sch.get_block("B", func_name="main")
    with pytest.raises(ScheduleError, match="this schedule has one function"):
        sch.get_block("B", func_name="other")


def test_three_axis_tile() -> None:
    n = 16
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda y, x: te.sum(A[y, k] * B[k, x], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = C.op.axis
    axes = s[C].tile(y, x, k, 8, 8, 8)
    assert len(axes) == 6  # noqa: PLR2004
    rng = np.random.default_rng(2)
    a, b = rng.random((n, n), "float32"), rng.random((n, n), "float32")
    c = np.empty((n, n), "float32")
    mlc.build(s, [A, B, C], target="llvm")(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
