"""vectorize_loops: vectorized loops become Ramp/Broadcast vector code, or stay serial."""

import numpy as np
import pytest
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

from mlc.tir.expr import Broadcast, BufferLoad, Call, Ramp, Select, Var, const
from mlc.tir.functor import post_order_visit
from mlc.tir.stmt import BufferStore, For, ForKind, IfThenElse, PrimFunc
from mlc.transform import lower, simplify, vectorize_loops

V = ForKind.VECTORIZED


def _vectorize(func):
    return simplify(vectorize_loops(func))


def _nodes(func, cls):
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, cls) else None)
    return found


def _kinds(func):
    return [f.kind for f in _nodes(func, For)]


def test_contiguous_load_and_broadcast_scalar():
    A, B, C = buffer("A", (32,)), buffer("B", (32,)), buffer("C", (4,))
    i, j = Var("i"), Var("j")
    before = PrimFunc((A, B, C), loop(i, 4, loop(j, 8, BufferStore(
        B, A[i * 8 + j] * C[i], (i * 8 + j,)), V)))
    ramp = Ramp(i * 8, const(1), 8)
    expected = PrimFunc((A, B, C), loop(i, 4, BufferStore(
        B, A[ramp] * Broadcast(C[i], 8), (ramp,))))
    after = _vectorize(before)
    assert_ir_equal(after, expected)
    assert after.body.body.value.dtype == "float32x8"
    a, c = np.random.rand(32).astype("float32"), np.random.rand(4).astype("float32")
    b = np.zeros(32, "float32")
    eval_prim_func(after, a, b, c)
    np.testing.assert_allclose(b, a * np.repeat(c, 8), rtol=1e-6)


def test_strided_index_gives_a_strided_ramp():
    A, B = buffer("A", (16,)), buffer("B", (8,))
    j = Var("j")
    after = _vectorize(PrimFunc((A, B), loop(j, 8, BufferStore(B, A[j * 2] + 1.0, (j,)), V)))
    (load,) = _nodes(after, BufferLoad)
    assert isinstance(load.indices[0], Ramp) and str(load.indices[0].stride) == "2"
    a, b = np.random.rand(16).astype("float32"), np.zeros(8, "float32")
    eval_prim_func(after, a, b)
    np.testing.assert_allclose(b, a[::2] + 1.0)


def test_math_calls_and_selects_without_loads_are_vectorized():
    A, B = buffer("A", (8,)), buffer("B", (8,))
    j = Var("j")
    value = Call("float32", "exp", (A[j],)) + Select(j < 4, const(1.0), const(2.0))
    after = _vectorize(PrimFunc((A, B), loop(j, 8, BufferStore(B, value, (j,)), V)))
    assert not _nodes(after, For)
    (call,) = _nodes(after, Call)
    assert call.dtype == "float32x8"
    a, b = np.random.rand(8).astype("float32"), np.zeros(8, "float32")
    eval_prim_func(after, a, b)
    np.testing.assert_allclose(b, np.exp(a) + np.where(np.arange(8) < 4, 1.0, 2.0), rtol=1e-6)


@pytest.mark.parametrize(
    "why", ["reads another lane", "lanes' loops overlap", "same location", "non-affine",
            "guarded load"]
)
def test_bodies_that_cannot_be_vectorized_stay_serial(why):
    A, B = buffer("A", (32,)), buffer("B", (8,))
    j, k = Var("j"), Var("k")
    if why == "reads another lane":  # lane j reads B[7 - j], which lane 7 - j writes
        body = loop(k, 2, BufferStore(B, B[7 - j] + A[j * 4 + k], (j,)))
    elif why == "lanes' loops overlap":  # lanes j and j + 1 both write A[j + 1], ...
        body = loop(k, 4, BufferStore(A, B[j] + 1.0, (j + k,)))
    elif why == "same location":
        body = BufferStore(B, B[0] + A[j * 4], (const(0),))
    elif why == "non-affine":
        body = BufferStore(B, A[j // 2], (j,))
    else:
        body = BufferStore(B, Select(j < 7, A[j * 4 + 4], const(0.0)), (j,))
    func = PrimFunc((A, B), loop(j, 8, body, V))
    after = vectorize_loops(func)
    assert _kinds(after)[-1] is ForKind.SERIAL  # the outermost loop, now serial
    assert not _nodes(after, Ramp)
    a = np.random.rand(32).astype("float32")
    expected, actual = np.random.rand(8).astype("float32"), None
    actual = expected.copy()
    eval_prim_func(func, a, expected)
    eval_prim_func(after, a, actual)
    np.testing.assert_allclose(actual, expected)


def _tail_func():
    """for io in range(ceil(n / 4)): for ii in vectorized(4): block(vi = io*4 + ii) where
    io*4 + ii < n: B[vi] = A[vi] * 2 + 1"""
    n = Var("n")
    A, B = buffer("A", (n,)), buffer("B", (n,))
    io, ii, vi = Var("io"), Var("ii"), Var("vi")
    body = block_realize("B", (spatial(vi, n),), (io * 4 + ii,),
                         BufferStore(B, A[vi] * 2.0 + 1.0, (vi,)), predicate=io * 4 + ii < n)
    return PrimFunc((A, B), root(loop(io, (n + 3) // 4, loop(ii, 4, body, V))))


@pytest.mark.parametrize("n", [8, 10, 3, 1])
def test_non_dividing_split_gets_a_vector_body_and_a_scalar_tail(n):
    func = _tail_func()
    lowered = lower(func)
    check_lowered(lowered)
    (outer,) = [f for f in _nodes(lowered, For) if f.loop_var.name == "io"]
    partition = outer.body
    assert isinstance(partition, IfThenElse)
    assert isinstance(partition.then_case, BufferStore)
    assert isinstance(partition.then_case.indices[0], Ramp)
    assert isinstance(partition.else_case, For) and partition.else_case.kind is ForKind.SERIAL
    a = np.random.rand(n).astype("float32")
    for f in (func, lowered):
        b = np.zeros(n, "float32")
        eval_prim_func(f, a, b)
        np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_matmul_with_vectorized_spatial_loop_and_init():
    A, B, C = buffer("A", (4, 6)), buffer("B", (6, 16)), buffer("C", (4, 16))
    i, jo, k, ji = Var("i"), Var("jo"), Var("k"), Var("ji")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    blk = block_realize(
        "C", (spatial(vi, 4), spatial(vj, 16), reduce(vk, 6)), (i, jo * 8 + ji, k),
        BufferStore(C, C[vi, vj] + A[vi, vk] * B[vk, vj], (vi, vj)),
        init=BufferStore(C, const(0.0), (vi, vj)),
    )
    func = PrimFunc((A, B, C), root(loop(i, 4, loop(jo, 2, loop(k, 6, loop(ji, 8, blk, V))))))
    lowered = lower(func)
    check_lowered(lowered)
    stores = _nodes(lowered, BufferStore)
    assert all(isinstance(s.indices[0], Ramp) for s in stores)
    a, b = np.random.rand(4, 6).astype("float32"), np.random.rand(6, 16).astype("float32")
    c = np.zeros((4, 16), "float32")
    eval_prim_func(lowered, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_extent_one_and_symbolic_extents():
    n = Var("n")
    A = buffer("A", (n,))
    j = Var("j")
    after = vectorize_loops(PrimFunc((A,), loop(j, n, BufferStore(A, const(1.0), (j,)), V)))
    assert _kinds(after) == [ForKind.SERIAL]
    one = vectorize_loops(PrimFunc((A,), loop(j, 1, BufferStore(A, const(1.0), (j,)), V)))
    assert isinstance(one.body, BufferStore)
