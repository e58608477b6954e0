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
    assert len(versioned) == 3  # the fast version, then the versions down the guards
    fast = versioned[0]
    assert "< 10" not in str(fast.body)  # the row guards are gone; `if r == 0` (init) stays


def test_the_last_tile_is_versioned_down_its_guards():
    # rows 2 and 3 of a 4-row tile over 10 rows are guarded (rows 0, 1 always exist):
    #   if g2 and g3: rows 0-3 | elif g2: rows 0-2, no guard | else: rows 0, 1 (+ row 3 guarded)
    text = str(lower(_guarded_rows()))
    lines = [ln.strip() for ln in text.splitlines()]
    assert lines.count("if i_0 * 4 + 2 < 10 and i_0 * 4 + 3 < 10:") == 1
    assert lines.count("if i_0 * 4 + 2 < 10:") == 1
    middle = text.split("if i_0 * 4 + 2 < 10:\n")[1].split("else:")[0]
    assert "< 10" not in middle  # rows 0-2 with no test inside the loop
    assert "C[i_0 * 4 + 2] = C[i_0 * 4 + 2] + A[i_0 * 64 + r_1 + 32]" in middle
    assert "C[i_0 * 4 + 3]" not in middle  # row 3 fails there: dropped
    last = text.split("if i_0 * 4 + 2 < 10:\n")[1].split("else:")[1]
    assert "C[i_0 * 4 + 2]" not in last


def test_more_guards_than_versions_keep_the_guarded_loop():
    from mlc.transform import unswitch

    old = unswitch.MAX_VERSIONS
    unswitch.MAX_VERSIONS = 2
    try:
        versioned = _ifs_around_innermost_loops(lower(_guarded_rows()))
    finally:
        unswitch.MAX_VERSIONS = old
    assert len(versioned) == 2
    assert "< 10" in str(versioned[1].body)


def test_versioned_loops_compute_the_same():
    for n in (8, 9, 10, 11, 12, 13):  # every tail of a 4-row tile, and none
        a = np.random.rand(n, 16).astype("float32")
        c = np.zeros(n, "float32")
        mlc.build(_guarded_rows(n=n))(a, c)
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
