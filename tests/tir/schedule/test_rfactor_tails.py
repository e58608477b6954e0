"""rfactor after a split that does not divide the extent: the predicate goes with the
factored block (as a guard on its own variables) and, for the loop kept, with the block that
reduces the partial results."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir


def row_sum(n: int, factor: int) -> tuple[tir.Schedule, list]:
    A = te.placeholder((8, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    _, kk = sch.get_loops(sch.get_block("B"))
    return sch, sch.split(kk, [None, factor])


@pytest.mark.parametrize("n,factor", [(1000, 64), (100, 128), (7, 3)])
@pytest.mark.parametrize("which", [0, 1])
def test_rfactor_with_a_tail_matches_numpy(n, factor, which):
    sch, loops = row_sum(n, factor)
    rf = sch.rfactor(loops[which], 0)
    if which == 1:  # the factored loop is spatial now: it may be vectorized, tail and all
        sch.vectorize(sch.get_loops(rf)[-1])
    f = mlc.build(sch.mod, target="llvm")
    a = np.random.default_rng(1).random((8, n), dtype=np.float32)
    b = np.full(8, np.nan, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a.sum(1), rtol=1e-4)


def test_rfactor_tail_predicates_in_the_ir():
    sch, (ko, ki) = row_sum(100, 128)
    sch.rfactor(ki, 0)
    text = str(sch.mod)
    assert "if vk_0 * 128 + vk_1 < 100:" in text     # the factored block's guard
    assert "where(k_1_1 < 100)" in text               # only the partial sums that exist


def test_te_rfactor_with_a_tail():
    n = 1000
    A = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    f = mlc.build(s, [A, B], target="llvm")
    a = np.random.default_rng(2).random(n, dtype=np.float32)
    b = np.zeros(1, "float32")
    f(a, b)
    np.testing.assert_allclose(b, [a.sum()], rtol=1e-4)
    assert BF is not None
