"""compact_buffers: intermediates shrink to one tile and move into the loop that uses them."""

import numpy as np
from lowering_helpers import buffer, check_lowered, eval_prim_func, loop

from mlc import te, tir
from mlc.tir.expr import Var, const
from mlc.tir.functor import post_order_visit
from mlc.tir.stmt import Allocate, BufferStore, For, PrimFunc, seq
from mlc.transform import compact_buffers, lower, lower_blocks


def _allocs(func):
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, Allocate) else None)
    return found


def _shape(alloc):
    return [int(d.value) for d in alloc.buffer.shape]


def _cache_write_matmul():
    k = te.reduce_axis((0, 16), name="k")
    A = te.placeholder((32, 16), name="A")
    B = te.placeholder((16, 32), name="B")
    C = te.compute((32, 32), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    blk = sch.get_block("C")
    cw = sch.cache_write(blk, 0, "local")
    i, j = sch.get_loops(cw)[:2]
    io, ii = sch.split(i, factors=[None, 8])
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(io, jo, ii, ji)
    sch.compute_at(blk, jo)
    return sch.mod


def test_write_cache_becomes_one_tile_inside_its_loop():
    func = _cache_write_matmul()
    after = compact_buffers(lower_blocks(func))
    (alloc,) = _allocs(after)
    assert _shape(alloc) == [8, 8] and alloc.buffer.scope == "local"
    # the allocation sits directly inside the second tile loop
    tile_loops = []
    post_order_visit(after.body, lambda n: tile_loops.append(n)
                     if isinstance(n, For) and n.body is alloc else None)
    assert [f.loop_var.name for f in tile_loops] == ["ax1_0"]
    lowered = lower(func)
    check_lowered(lowered)
    a = np.random.rand(32, 16).astype("float32")
    b = np.random.rand(16, 32).astype("float32")
    c = np.zeros((32, 32), "float32")
    eval_prim_func(lowered, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def _run_both(func, *arrays):
    outs = []
    for f in (func, compact_buffers(func)):
        copies = [x.copy() for x in arrays]
        eval_prim_func(f, *copies)
        outs.append(copies)
    for x, y in zip(*outs):
        np.testing.assert_allclose(x, y, rtol=1e-6)


def test_accumulator_stays_outside_its_reduction_loop():
    A, B = buffer("A", (4, 8)), buffer("B", (4,))
    T = buffer("T", (4,), scope="local")
    i, k = Var("i"), Var("k")
    body = loop(i, 4, seq(
        BufferStore(T, const(0.0), (i,)),
        loop(k, 8, BufferStore(T, T[i] + A[i, k], (i,))),
        BufferStore(B, T[i] * 2.0, (i,)),
    ))
    func = PrimFunc((A, B), Allocate(T, body))
    after = compact_buffers(func)
    (alloc,) = _allocs(after)
    assert _shape(alloc) == [1]
    assert isinstance(after.body, For) and after.body.body is alloc  # inside i, outside k
    _run_both(func, np.random.rand(4, 8).astype("float32"), np.zeros(4, "float32"))


def test_values_carried_across_iterations_keep_the_allocation_outside():
    A, B = buffer("A", (8,)), buffer("B", (8,))
    T = buffer("T", (10,))
    i, j, j2 = Var("i"), Var("j"), Var("j")
    # a sliding window: iteration i reads what iterations i-1 and i-2 wrote
    body = loop(i, 8, seq(
        loop(j, 3, BufferStore(T, T[i + j] + A[i], (i + j,))),
        BufferStore(B, T[i], (i,)),
    ))
    init = loop(j2, 10, BufferStore(T, const(0.0), (j2,)))
    func = PrimFunc((A, B), Allocate(T, seq(init, body)))
    after = compact_buffers(func)
    (alloc,) = _allocs(after)
    assert after.body is alloc and _shape(alloc) == [10]
    _run_both(func, np.random.rand(8).astype("float32"), np.zeros(8, "float32"))


def test_strided_buffers_are_left_alone():
    A = buffer("A", (4, 6))
    T = buffer("T", (4, 6), scope="local", strides=(const(8), const(1)))
    i, j, i2, j2 = Var("i"), Var("j"), Var("i"), Var("j")
    func = PrimFunc((A,), Allocate(T, seq(
        loop(i, 4, loop(j, 6, BufferStore(T, A[i, j], (i, j)))),
        loop(i2, 4, loop(j2, 6, BufferStore(A, T[i2, j2], (i2, j2)))),
    )))
    assert compact_buffers(func) is not None
    assert _allocs(compact_buffers(func))[0].buffer is T
