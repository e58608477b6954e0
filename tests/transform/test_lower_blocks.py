"""lower_blocks: blocks become plain statements (bindings substituted, init, predicate, alloc)."""

import numpy as np
from lowering_helpers import (
    assert_ir_equal,
    block_realize,
    check_lowered,
    eval_prim_func,
    loop,
    reduce,
    root,
    spatial,
)

from mlc import te
from mlc.tir.expr import Var, const
from mlc.tir.stmt import Allocate, Buffer, BufferStore, IfThenElse, PrimFunc, seq
from mlc.transform import lower, lower_blocks


def test_bindings_are_substituted():
    A, B = Buffer("A", (8,)), Buffer("B", (8,))
    i, vi = Var("i"), Var("vi")
    before = PrimFunc((A, B), root(loop(i, 8, block_realize(
        "B", (spatial(vi, 8),), (i,), BufferStore(B, A[vi] + 1.0, (vi,)), reads=(A,), writes=(B,),
    ))))
    expected = PrimFunc((A, B), loop(i, 8, BufferStore(B, A[i] + 1.0, (i,))))
    assert_ir_equal(lower_blocks(before), expected)


def test_init_runs_at_the_first_reduction_step():
    A, C = Buffer("A", (4, 8)), Buffer("C", (4,))
    i, k, vi, vk = Var("i"), Var("k"), Var("vi"), Var("vk")
    before = PrimFunc((A, C), root(loop(i, 4, loop(k, 8, block_realize(
        "C", (spatial(vi, 4), reduce(vk, 8)), (i, k),
        BufferStore(C, C[vi] + A[vi, vk], (vi,)),
        init=BufferStore(C, const(0.0), (vi,)), reads=(A, C), writes=(C,),
    )))))
    expected = PrimFunc((A, C), loop(i, 4, loop(k, 8, seq(
        IfThenElse(k == 0, BufferStore(C, const(0.0), (i,))),
        BufferStore(C, C[i] + A[i, k], (i,)),
    ))))
    assert_ir_equal(lower_blocks(before), expected)


def test_predicate_becomes_a_guard():
    n = Var("n")
    A, B = Buffer("A", (n,)), Buffer("B", (n,))
    io, ii, vi = Var("io"), Var("ii"), Var("vi")
    before = PrimFunc((A, B), root(loop(io, (n + 3) // 4, loop(ii, 4, block_realize(
        "B", (spatial(vi, n),), (io * 4 + ii,), BufferStore(B, A[vi] * 2.0, (vi,)),
        predicate=io * 4 + ii < n,
    )))))
    expected = PrimFunc((A, B), loop(io, (n + 3) // 4, loop(ii, 4, IfThenElse(
        io * 4 + ii < n, BufferStore(B, A[io * 4 + ii] * 2.0, (io * 4 + ii,)),
    ))))
    assert_ir_equal(lower_blocks(before), expected)


def test_alloc_buffers_become_allocate():
    A, B = Buffer("A", (8,)), Buffer("B", (8,))
    T = Buffer("T", (8,), scope="global")
    i, j = Var("i"), Var("j")
    vi, vj = Var("vi"), Var("vj")
    body = seq(
        loop(i, 8, block_realize("T", (spatial(vi, 8),), (i,), BufferStore(T, A[vi], (vi,)))),
        loop(j, 8, block_realize("B", (spatial(vj, 8),), (j,), BufferStore(B, T[vj], (vj,)))),
    )
    before = PrimFunc((A, B), root(body, alloc=(T,)))
    expected = PrimFunc((A, B), Allocate(T, seq(
        loop(i, 8, BufferStore(T, A[i], (i,))), loop(j, 8, BufferStore(B, T[j], (j,))),
    )))
    assert_ir_equal(lower_blocks(before), expected)


def test_matmul_with_init_computes_what_numpy_does():
    k = te.reduce_axis((0, 12), name="k")
    X = te.placeholder((6, 12), name="X")
    W = te.placeholder((12, 5), name="W")
    Y = te.compute((6, 5), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    Z = te.compute((6, 5), lambda i, j: te.max(Y[i, j], 0.0), name="Z")
    func = te.create_prim_func([X, W, Z])
    lowered = lower(func)
    check_lowered(lowered)
    x = np.random.rand(6, 12).astype("float32") - 0.5
    w = np.random.rand(12, 5).astype("float32")
    for f in (func, lowered):
        z = np.zeros((6, 5), "float32")
        eval_prim_func(f, x, w, z)
        np.testing.assert_allclose(z, np.maximum(x @ w, 0), rtol=1e-5, atol=1e-6)
