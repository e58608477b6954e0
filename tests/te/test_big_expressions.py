"""Expressions of any size: a te.compute of 10,000 Python-built terms builds, prints,
simplifies, verifies, lowers, compiles and runs without a RecursionError.

Chains of one associative operator (+, *, min, max, &, |) are kept shallow as they are built
(mlc/tir/expr.py, ``chain``): the first 32 terms as written, then balanced groups. The terms
keep their order; float sums are grouped pairwise, as np.sum groups them."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.testing import eval_prim_func, evaluate

N = 10_000


def _depth(e: tir.PrimExpr) -> int:
    deepest, stack = 0, [(e, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        for child in ("a", "b", "value", "condition", "true_value", "false_value"):
            c = getattr(node, child, None)
            if isinstance(c, tir.PrimExpr):
                stack.append((c, d + 1))
        for arg in getattr(node, "args", ()):
            stack.append((arg, d + 1))
    return deepest


BODIES: dict[str, Callable[[te.Tensor, te.Tensor], Callable[[tir.PrimExpr], tir.PrimExpr]]] = {
    "sum": lambda A, W: lambda i: sum(A[i, j] for j in range(N)),  # type: ignore[return-value]
    "weighted_sum": lambda A, W: lambda i: sum(A[i, j] * W[j] for j in range(N)),  # type: ignore[return-value]
    "product": lambda A, W: lambda i: functools.reduce(
        operator.mul, (A[i, j] * 0.0001 + 1.0 for j in range(N))
    ),
    "max_chain": lambda A, W: lambda i: functools.reduce(te.max, (A[i, j] for j in range(N))),
    "min_chain": lambda A, W: lambda i: functools.reduce(te.min, (A[i, j] for j in range(N))),
    "mixed": lambda A, W: lambda i: sum(
        te.max(A[i, j], W[j]) - A[i, (j + 1) % N] * 0.5 for j in range(N)
    ),  # type: ignore[return-value]
}


def _numpy(name: str, a: np.ndarray, w: np.ndarray) -> np.ndarray:
    a64, w64 = a.astype("float64"), w.astype("float64")
    return {  # type: ignore[no-any-return]
        "sum": lambda: a64.sum(axis=1),
        "weighted_sum": lambda: a64 @ w64,
        "product": lambda: np.prod(a64 * 0.0001 + 1.0, axis=1),
        "max_chain": lambda: a64.max(axis=1),
        "min_chain": lambda: a64.min(axis=1),
        "mixed": lambda: (np.maximum(a64, w64) - np.roll(a64, -1, axis=1) * 0.5).sum(axis=1),
    }[name]()


def _program(name: str) -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    A = te.placeholder((2, N), name="A")
    W = te.placeholder((N,), name="W")
    B = te.compute((2,), BODIES[name](A, W), name="B")
    return A, W, B


@pytest.fixture(scope="module")
def arrays() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((2, N), dtype="float32"), rng.random(N, dtype="float32")


@pytest.mark.parametrize("name", ["sum", "product", "max_chain", "mixed"])
def test_build_print_verify_evaluate(
    name: str, arrays: tuple[np.ndarray, np.ndarray]
) -> None:
    A, W, B = _program(name)
    body = B.op.body[0]
    assert _depth(body) < 100  # noqa: PLR2004 - shallow whatever the number of terms
    assert str(body).count("A[") >= N
    func = te.create_prim_func([A, W, B])
    assert "A[" in str(func)
    tir.verify_well_formed(func)
    a, w = arrays
    expected = _numpy(name, a, w)
    ref = evaluate([B], {A: a, W: w})["B"]
    np.testing.assert_allclose(ref, expected, rtol=1e-4)
    out = np.empty(2, "float32")
    eval_prim_func(func, a, w, out)
    np.testing.assert_allclose(out, expected, rtol=1e-4)


def test_simplify() -> None:
    # The simplifier is slow on long min/max chains (quadratic), hence fewer terms there.
    _, _, B = _program("weighted_sum")
    assert "A[" in str(tir.simplify(B.op.body[0]))
    A = te.placeholder((N // 5,), name="A")
    m = functools.reduce(te.max, (A[j] for j in range(N // 5)))
    assert "A[" in str(tir.simplify(m))


@pytest.mark.slow
def test_lower_compile_and_run(arrays: tuple[np.ndarray, np.ndarray]) -> None:
    # (A sum of 10,000 products compiles too, but LLVM takes minutes over that one basic
    # block: the plain sum keeps this test to seconds.)
    A, W, B = _program("sum")
    s = te.create_schedule(B.op)
    assert "A[" in str(mlc.lower(s, [A, B]))
    f = mlc.build(s, [A, B], target="llvm")
    a, w = arrays
    out = np.empty(2, "float32")
    f(a, out)
    np.testing.assert_allclose(out, _numpy("sum", a, w), rtol=1e-4)


def test_short_chains_stay_as_written() -> None:
    A = te.placeholder((8,), name="A")
    e = A[0] + A[1] + A[2] + A[3]
    assert str(e) == "A[0] + A[1] + A[2] + A[3]"
    assert isinstance(e, tir.Add) and isinstance(e.a, tir.Add) and isinstance(e.a.a, tir.Add)


def test_all_and_any_of_many_conditions() -> None:
    A = te.placeholder((N,), name="A")
    cond = te.all(*[A[j] > 0.0 for j in range(N)])
    assert _depth(cond) < 100  # noqa: PLR2004
    B = te.compute((1,), lambda i: te.if_then_else(cond, 1.0, 0.0), name="B")
    a = np.ones(N, "float32")
    np.testing.assert_array_equal(evaluate([B], {A: a})["B"], [1.0])
    a[N // 2] = -1
    np.testing.assert_array_equal(evaluate([B], {A: a})["B"], [0.0])
