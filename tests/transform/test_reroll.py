"""reroll_sums: a long sum built term by term in Python is computed by loops, with the same
additions in the same order (bit for bit the result of the unrolled expression). Before,
a 10,000-term sum took 40-55 s to build (LLVM's SLP vectorizer on one 30,000-instruction
basic block, quadratic); the test builds it and checks the program is loops."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.tir.functor import collect
from mlc.tir.stmt import For
from mlc.transform.lower_blocks import lower_blocks
from mlc.transform.reroll import MIN_ADDS, reroll_sums


def _python_sum(n: int, term, dtype: str = "float32") -> tuple[te.Tensor, te.Tensor]:
    A = te.placeholder((2 * n + 8,), dtype, name="A")

    def f(i):
        e = term(A, 0)
        for t in range(1, n):
            e = e + term(A, t)
        return e

    return A, te.compute((1,), f, name="B")


def _run(func, a: np.ndarray, dtype: str) -> np.ndarray:
    out = np.zeros(1, dtype)
    mlc.build(func)(a, out)
    return out


@pytest.mark.parametrize("n, term, exact", [
    (10000, lambda A, t: A[t] * 0.5, True),
    (300, lambda A, t: A[t] + A[t + 1], True),  # terms that are sums themselves
    # a product beside an addition: LLVM may fuse them (FMA), in a loop as unrolled
    (777, lambda A, t: A[2 * t + 3] * A[t], False),
])
def test_rerolled_sum_equals_the_unrolled_expression(n, term, exact) -> None:
    A, B = _python_sum(n, term)
    func = te.create_prim_func([A, B])
    rerolled = reroll_sums(lower_blocks(func))
    assert collect(rerolled.body, lambda x: isinstance(x, For) and x.loop_var.name == "t")
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(2 * n + 8) * 1000).astype("float32")
    got = _run(func, a, "float32")
    # the same expression evaluated the way it is written, in float32, with numpy
    expect = _evaluate_tree(B.op.body[0], a)  # the grouping the expression has
    if exact:
        assert got[0] == expect
    else:
        np.testing.assert_allclose(got[0], expect, rtol=1e-5)


def _evaluate_tree(e, a: np.ndarray) -> np.float32:
    """The float32 value of ``e`` with the grouping it has (iteratively, post-order)."""
    from mlc.tir.expr import Add, BufferLoad, FloatImm, IntImm, Mul

    def index(x) -> int:
        if isinstance(x, IntImm):
            return x.value
        if isinstance(x, Add):
            return index(x.a) + index(x.b)
        if isinstance(x, Mul):
            return index(x.a) * index(x.b)
        raise AssertionError(type(x))

    values: dict[int, np.float32] = {}
    stack = [(e, False)]
    while stack:
        node, done = stack.pop()
        if isinstance(node, (Add, Mul)):
            if not done:
                stack += [(node, True), (node.b, False), (node.a, False)]
                continue
            x, y = values[id(node.a)], values[id(node.b)]
            values[id(node)] = np.float32(x + y) if isinstance(node, Add) else np.float32(x * y)
        elif isinstance(node, BufferLoad):
            values[id(node)] = a[index(node.indices[0])]
        elif isinstance(node, FloatImm):
            values[id(node)] = np.float32(node.value)
        else:
            raise AssertionError(type(node))
    return values[id(e)]


def test_short_sums_and_sums_of_unlike_terms_are_left_alone() -> None:
    A, B = _python_sum(MIN_ADDS // 2, lambda A, t: A[t] * 0.5)
    lowered = lower_blocks(te.create_prim_func([A, B]))
    assert reroll_sums(lowered) is lowered
    A, B = _python_sum(400, lambda A, t: A[(t * t) % 97] * 0.5)  # constants do not step
    lowered = lower_blocks(te.create_prim_func([A, B]))
    assert reroll_sums(lowered) is lowered


def test_a_sum_inside_a_condition_is_not_hoisted() -> None:
    n = 400
    A = te.placeholder((n,), name="A")

    def f(i):
        e = A[0]
        for t in range(1, n):
            e = e + A[t]
        return te.if_then_else(i > 0, e, 0.0)  # only the chosen side may run

    B = te.compute((1,), f, name="B")
    lowered = lower_blocks(te.create_prim_func([A, B]))
    assert reroll_sums(lowered) is lowered
