"""unswitch_loops: guards an innermost loop does not change are tested once, outside it."""

import numpy as np

import mlc
from mlc import te, tir
from mlc.tir.functor import post_order_visit
from mlc.tir.stmt import For, IfThenElse
from mlc.transform import lower


def _guarded_rows(n=10, k=16, rows=4):
    """C[i] = sum_k A[i, k]: i split by a factor that does not divide n, k innermost."""
    A = te.placeholder((n, k), name="A")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n,), lambda i: te.sum(A[i, r], axis=r), name="C")
    sch = tir.Schedule(te.create_prim_func([A, C]))
    blk = sch.get_block("C")
    i, kk = sch.get_loops(blk)
    io, ii = sch.split(i, factors=[None, rows])
    sch.reorder(io, kk, ii)
    sch.unroll(ii)
    return sch.mod


def _ifs_around_innermost_loops(func):
    """For each innermost loop: is it directly under an if (versioned)?"""
    found = []

    def visit(n):
        if isinstance(n, IfThenElse):
            for case in (n.then_case, n.else_case):
                if isinstance(case, For):
                    found.append(case)

    post_order_visit(func.body, visit)
    return found


def test_a_guarded_unrolled_tile_gets_a_guard_free_version():
    lowered = lower(_guarded_rows())
    versioned = _ifs_around_innermost_loops(lowered)
    assert len(versioned) == 2  # the fast version and the guarded one
    fast, guarded = versioned
    assert "< 10" not in str(fast.body)  # the row guards are gone; `if r == 0` (init) stays
    assert "< 10" in str(guarded.body)


def test_versioned_loops_compute_the_same():
    a = np.random.rand(10, 16).astype("float32")
    c = np.zeros(10, "float32")
    mlc.build(_guarded_rows())(a, c)
    np.testing.assert_allclose(c, a.sum(axis=1), rtol=1e-5)


def test_a_guard_that_moves_with_the_loop_stays_inside():
    A = te.placeholder((10,), name="A")
    C = te.compute((10,), lambda i: A[i] * 2.0, name="C")
    sch = tir.Schedule(te.create_prim_func([A, C]))
    (i,) = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 4])
    lowered = lower(sch.mod)
    assert not _ifs_around_innermost_loops(lowered)
    a = np.random.rand(10).astype("float32")
    c = np.zeros(10, "float32")
    mlc.build(sch.mod)(a, c)
    np.testing.assert_allclose(c, 2 * a, rtol=1e-6)
