"""unroll_loops: small unrolled loops become copies of their body."""

import numpy as np
from lowering_helpers import (
    assert_ir_equal,
    block_realize,
    buffer,
    check_lowered,
    eval_prim_func,
    loop,
    reduce,
    root,
    spatial,
)

from mlc.tir.expr import Var, const
from mlc.tir.functor import post_order_visit
from mlc.tir.stmt import Allocate, BufferStore, For, ForKind, PrimFunc, seq
from mlc.transform import lower, simplify, unroll_loops
from mlc.transform.unroll import MAX_UNROLL

U = ForKind.UNROLLED


def _nodes(func, cls):
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, cls) else None)
    return found


def test_copies_with_the_variable_replaced():
    A, C = buffer("A", (12,)), buffer("C", (4,))
    i, k = Var("i"), Var("k")
    before = PrimFunc((A, C), loop(i, 4, loop(k, 3, BufferStore(C, C[i] + A[i * 3 + k], (i,)), U)))
    expected = PrimFunc((A, C), loop(i, 4, seq(*(
        BufferStore(C, C[i] + A[i * 3 + c if c else i * 3], (i,)) for c in range(3)))))
    after = simplify(unroll_loops(before))
    assert_ir_equal(after, expected)


def test_inner_loops_and_allocations_get_fresh_definitions():
    A = buffer("A", (8,))
    T = buffer("T", (2,), scope="local")
    k, j = Var("k"), Var("j")
    body = Allocate(T, seq(
        loop(j, 2, BufferStore(T, A[k * 2 + j], (j,))),
        loop(j, 2, BufferStore(A, T[j] * 2.0, (k * 2 + j,))),
    ))
    func = PrimFunc((A,), loop(k, 4, body, U))
    after = unroll_loops(func)
    allocs = _nodes(after, Allocate)
    assert len(allocs) == 4 and len({id(a.buffer.data) for a in allocs}) == 4
    loops = _nodes(after, For)
    assert len(loops) == 8 and len({id(f.loop_var) for f in loops}) == 8  # each For its own
    a = np.random.rand(8).astype("float32")
    expected = a * 2
    eval_prim_func(after, a)
    np.testing.assert_allclose(a, expected)


def test_long_or_symbolic_loops_stay_serial():
    n = Var("n")
    A = buffer("A", (n,))
    j = Var("j")
    sym = unroll_loops(PrimFunc((A,), loop(j, n, BufferStore(A, const(1.0), (j,)), U)))
    assert sym.body.kind is ForKind.SERIAL
    big = unroll_loops(PrimFunc((A,), loop(j, MAX_UNROLL + 1, BufferStore(A, const(1.0), (j,)), U)))
    assert big.body.kind is ForKind.SERIAL


def test_unrolled_reduction_end_to_end():
    A, C = buffer("A", (5, 8)), buffer("C", (5,))
    i, ko, ki = Var("i"), Var("ko"), Var("ki")
    vi, vk = Var("vi"), Var("vk")
    blk = block_realize("C", (spatial(vi, 5), reduce(vk, 8)), (i, ko * 4 + ki),
                        BufferStore(C, C[vi] + A[vi, vk], (vi,)),
                        init=BufferStore(C, const(0.0), (vi,)))
    func = PrimFunc((A, C), root(loop(i, 5, loop(ko, 2, loop(ki, 4, blk, U)))))
    lowered = lower(func)
    check_lowered(lowered)
    assert len(_nodes(lowered, For)) == 2
    a = np.random.rand(5, 8).astype("float32")
    c = np.zeros(5, "float32")
    eval_prim_func(lowered, a, c)
    np.testing.assert_allclose(c, a.sum(axis=1), rtol=1e-5)
