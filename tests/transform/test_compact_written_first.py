"""compact_buffers: a copy that every iteration writes before reading (a packed panel made
by cache_read + compute_at) is allocated inside the loop, one per iteration (per thread
under a parallel loop), even when the iterations copy the same data."""

import numpy as np
from lowering_helpers import eval_prim_func

import mlc
from mlc import te, tir
from mlc.tir.functor import post_order_visit
from mlc.tir.stmt import Allocate, For
from mlc.transform import lower


def _matmul(n=32, m=32, k=16):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def _packed(parallel: bool):
    """Rows outer, column panels inner: every row block packs the same panels of B."""
    sch = tir.Schedule(_matmul())
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, factors=[None, 8])
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(io, jo, k, ii, ji)
    panel = sch.cache_read(c, 1, "global")
    sch.compute_at(panel, jo)
    if parallel:
        sch.parallel(io)
    return sch.mod


def _alloc_loops(func):
    """{buffer name: (names of the loops around its Allocate, its shape)}"""
    out = {}

    def walk(node, loops):
        if isinstance(node, Allocate):
            out[node.buffer.name] = (loops, [int(d.value) for d in node.buffer.shape])
            walk(node.body, loops)
        elif isinstance(node, For):
            walk(node.body, [*loops, node.loop_var.name])
        else:
            for child in getattr(node, "seq", None) or []:
                walk(child, loops)
            for attr in ("then_case", "else_case"):
                if getattr(node, attr, None) is not None:
                    walk(getattr(node, attr), loops)

    walk(func.body, [])
    return out


def test_packed_panel_is_allocated_per_iteration_of_the_panel_loop():
    for parallel in (False, True):
        lowered = lower(_packed(parallel))
        loops, shape = _alloc_loops(lowered)["B_global"]
        assert loops == ["i_0", "j_0"]
        assert int(np.prod(shape)) == 16 * 8


def test_packed_panel_under_a_parallel_loop_computes_the_product():
    a = np.random.rand(32, 16).astype("float32")
    b = np.random.rand(16, 32).astype("float32")
    c = np.zeros((32, 32), "float32")
    mlc.build(_packed(parallel=True))(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    c2 = np.zeros((32, 32), "float32")
    eval_prim_func(lower(_packed(parallel=False)), a, b, c2)
    np.testing.assert_allclose(c2, a @ b, rtol=1e-5)


def test_an_accumulator_read_before_written_stays_outside_its_loop():
    # the write cache of a reduction is read (+=) across the reduction loop: never private
    sch = tir.Schedule(_matmul())
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    cw = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(cw, j)
    lowered = lower(sch.mod)
    loops, _ = _alloc_loops(lowered)["C_local"]
    assert "r" not in loops
    found = []
    post_order_visit(lowered.body, lambda n: found.append(n) if isinstance(n, For) else None)
    assert found


def _packed_rows_not_dividing(n=30, block=8, parallel=False):
    """Row blocks of 8 over 30 rows (the last block is short and its copy guarded), each
    block packing its rows of A: the copy's guard only cuts off rows past A's end."""
    sch = tir.Schedule(_matmul(n=n))
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, factors=[None, block])
    sch.reorder(io, j, k, ii)
    rows = sch.cache_read(c, 0, "global")
    sch.compute_at(rows, io)
    if parallel:
        sch.parallel(io)
    return sch.mod


def test_a_copy_guarded_only_past_the_end_is_still_allocated_per_iteration():
    # before: A_global (30, 16) at the root, shared by every iteration (and thread) of i_0;
    # after: (8, 16) inside i_0, the short last block leaving rows 6 and 7 unwritten and unread
    for parallel in (False, True):
        lowered = lower(_packed_rows_not_dividing(parallel=parallel))
        loops, shape = _alloc_loops(lowered)["A_global"]
        assert loops == ["i_0"] and shape == [8 * 16]
        text = str(lowered)
        assert "if i_0 * 8 + ax0 < 30:" in text
    a = np.random.rand(30, 16).astype("float32")
    b = np.random.rand(16, 32).astype("float32")
    c = np.zeros((30, 32), "float32")
    mlc.build(_packed_rows_not_dividing(parallel=True))(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    c2 = np.zeros((30, 32), "float32")
    eval_prim_func(lower(_packed_rows_not_dividing()), a, b, c2)
    np.testing.assert_allclose(c2, a @ b, rtol=1e-5)


def test_a_copy_guarded_inside_the_buffer_stays_shared():
    # a guard that skips rows inside the buffer (here: odd rows) leaves them to an earlier
    # iteration's values: the copy must not become private
    from mlc.tir.expr import FloorMod, const
    from mlc.transform.compact_buffers import _Access, _guards_cut_off_the_end

    v = tir.Var("v", "int32")
    shape = (const(30), const(16))
    inside = _Access((), (v, const(0)), (FloorMod(v, const(2)) < 1,), store=True)
    past_end = _Access((), (v + 3, const(0)), (v < 27,), store=True)
    short = _Access((), (v, const(0)), (v < 20,), store=True)
    assert not _guards_cut_off_the_end(inside, shape)
    assert _guards_cut_off_the_end(past_end, shape)
    assert not _guards_cut_off_the_end(short, shape)
