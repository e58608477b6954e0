"""vectorize on a loop with loops inside (issue 17): the inner loops stay scalar loops with a
vector body when the lanes touch disjoint elements, and the loop stays serial otherwise.
Results are checked against numpy either way."""

import numpy as np
import pytest
from lowering_helpers import buffer, eval_prim_func, loop

import mlc
from mlc import te
from mlc.tir.expr import Cast, Ramp, Var
from mlc.tir.functor import post_order_visit
from mlc.tir.stmt import BufferStore, For, ForKind, IfThenElse, PrimFunc
from mlc.transform import simplify, vectorize_loops

V = ForKind.VECTORIZED


def _nodes(func, cls):
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, cls) else None)
    return found


def _matvec(rows=16, lanes=8, K=None):
    K = te.var("K") if K is None else K
    A = te.placeholder((rows, K), name="A")
    B = te.placeholder((K,), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((rows,), lambda i: te.sum(A[i, k] * B[k], axis=k), name="C")
    s = te.create_schedule(C.op)
    _, ii = s[C].split(C.op.axis[0], factor=lanes)
    s[C].vectorize(ii)  # k is inside ii
    return s, [A, B, C]


def test_matvec_lowers_to_a_scalar_k_loop_with_a_vector_body():
    s, args = _matvec()
    expected = "\n".join([
        "@prim_func",
        'def main(A: Buffer((16, K), "float32"), B: Buffer((K,), "float32"), '
        'C: Buffer((16,), "float32")):',
        "    for i_0 in range(2):",
        "        C[ramp(i_0 * 8, 1, 8)] = broadcast(0.0, 8)",
        "        for k in range(K):",
        "            C[ramp(i_0 * 8, 1, 8)] = C[ramp(i_0 * 8, 1, 8)] + "
        "A[ramp(int64(i_0) * int64(8) * int64(K) + int64(k), int64(K), 8)] * "
        "broadcast(B[int64(k)], 8)",
    ])
    assert str(mlc.lower(s, args)) == expected


@pytest.mark.parametrize("K", [0, 1, 5, 33])
def test_reduction_inside_a_vectorized_spatial_loop_matches_numpy(K):
    s, args = _matvec()
    f = mlc.build(s, args)
    a = np.random.rand(16, K).astype("float32")
    b = np.random.rand(K).astype("float32")
    c = np.full(16, np.nan, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rows", [10, 3, 1])  # 8 does not divide them: vector body + tail
def test_tail_of_a_non_dividing_split_with_a_loop_inside(rows):
    s, args = _matvec(rows=rows, K=7)
    lowered = mlc.lower(s, args)
    assert _nodes(lowered, Ramp) or rows < 8  # rows < 8: only the tail ever runs
    f = mlc.build(s, args)
    a = np.random.rand(rows, 7).astype("float32")
    b = np.random.rand(7).astype("float32")
    c = np.zeros(rows, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_two_loops_inside_a_vectorized_loop():
    """for ii in vectorized(8): for j: for k: C[i, j] += A[i, k] * B[k, j]: lane ii writes
    row i only (stride 16 > what j reaches), so it vectorizes."""
    A = te.placeholder((16, 12), name="A")
    B = te.placeholder((12, 16), name="B")
    k = te.reduce_axis((0, 12), name="k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=8)
    s[C].reorder(io, ii, j, k)
    s[C].vectorize(ii)
    lowered = mlc.lower(s, [A, B, C])
    stores = [st for st in _nodes(lowered, BufferStore) if st.buffer.name == "C"]
    assert stores and all(isinstance(st.indices[0], Ramp) for st in stores)
    assert str(stores[0].indices[0].stride) == "16"
    assert {f.loop_var.name for f in _nodes(lowered, For)} == {"i_0", "j", "k"}
    f = mlc.build(s, [A, B, C])
    a, b = np.random.rand(16, 12).astype("float32"), np.random.rand(12, 16).astype("float32")
    c = np.zeros((16, 16), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_stencil_producer_computed_at_inside_the_vectorized_loop_stays_serial():
    """B = A * 2 computed at C's vectorized lane loop: the lanes' windows of B overlap (lane
    x writes B[x] and B[x + 1], lane x + 1 writes B[x + 1] and B[x + 2]), so no vector."""
    A = te.placeholder((33,), name="A")
    B = te.compute((33,), lambda x: A[x] * 2.0, name="B")
    C = te.compute((32,), lambda x: B[x] + B[x + 1], name="C")
    s = te.create_schedule(C.op)
    _, xi = s[C].split(C.op.axis[0], factor=8)
    s[B].compute_at(s[C], xi)
    s[C].vectorize(xi)
    lowered = mlc.lower(s, [A, C])
    assert not _nodes(lowered, Ramp)
    assert ForKind.VECTORIZED not in {f.kind for f in _nodes(lowered, For)}
    f = mlc.build(s, [A, C])
    a, c = np.random.rand(33).astype("float32"), np.zeros(32, "float32")
    f(a, c)
    np.testing.assert_allclose(c, a[:-1] * 2 + a[1:] * 2, rtol=1e-6)


def test_inner_loop_whose_extent_depends_on_the_lane_stays_serial():
    """for j in vectorized(8): for k in range(j): B[j] += A[k]: the lanes run different
    numbers of steps."""
    A, B = buffer("A", (8,)), buffer("B", (8,))
    j, k = Var("j"), Var("k")
    func = PrimFunc((A, B), loop(j, 8, loop(k, j, BufferStore(B, B[j] + A[k], (j,))), V))
    after = vectorize_loops(func)
    assert not _nodes(after, Ramp)
    a, b = np.random.rand(8).astype("float32"), np.zeros(8, "float32")
    eval_prim_func(after, a, b)
    np.testing.assert_allclose(b, np.concatenate([[0.0], np.cumsum(a)[:-1]]), rtol=1e-6)


def test_symbolic_inner_extent_with_a_lane_dependent_store_base_stays_serial():
    """B[j*n + k] = A[k] for k < n (symbolic): whether lanes overlap depends on n, which the
    pass cannot prove, so the loop stays serial (and correct)."""
    n = Var("n")
    A, B = buffer("A", (n,)), buffer("B", (8 * n,))
    j, k = Var("j"), Var("k")
    func = PrimFunc((A, B), loop(j, 8, loop(k, n, BufferStore(B, A[k] + 1.0, (j * n + k,))), V))
    after = vectorize_loops(func)
    assert not _nodes(after, Ramp)
    a, b = np.random.rand(5).astype("float32"), np.zeros(40, "float32")
    eval_prim_func(after, a, b)
    np.testing.assert_allclose(b, np.tile(a + 1.0, 8), rtol=1e-6)


def test_lane_dependent_base_with_a_mixed_radix_vectorizes():
    """B[j*4 + k] = A[k] for k < 4: the lanes write disjoint rows of 4."""
    A, B = buffer("A", (4,)), buffer("B", (32,))
    j, k = Var("j"), Var("k")
    func = PrimFunc((A, B), loop(j, 8, loop(k, 4, BufferStore(B, A[k] + 1.0, (j * 4 + k,))), V))
    after = simplify(vectorize_loops(func))
    (store,) = _nodes(after, BufferStore)
    assert isinstance(store.indices[0], Ramp) and str(store.indices[0].stride) == "4"
    a, b = np.random.rand(4).astype("float32"), np.zeros(32, "float32")
    eval_prim_func(after, a, b)
    np.testing.assert_allclose(b, np.tile(a + 1.0, 8), rtol=1e-6)


def test_vectorize_refuses_a_parallel_loop_inside():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    s[B].parallel(j)
    with pytest.raises(mlc.errors.ScheduleError, match="contains the parallel loop 'j'"):
        s[B].vectorize(i)
        mlc.lower(s, [A, B])


def test_guard_on_an_inner_loop_variable_stays_serial():
    """for j in vectorized(8): for k in range(4): if j + k < 9: B[j] += A[j + k]: the guard
    differs from one k to the next, so it is not one test in front of the vector body."""
    A, B = buffer("A", (12,)), buffer("B", (8,))
    j, k = Var("j"), Var("k")
    body = IfThenElse(j + k < 9, BufferStore(B, B[j] + A[j + k], (j,)))
    func = PrimFunc((A, B), loop(j, 8, loop(k, 4, body), V))
    after = vectorize_loops(func)
    assert not _nodes(after, Ramp)
    a, b = np.random.rand(12).astype("float32"), np.zeros(8, "float32")
    eval_prim_func(after, a, b)
    want = [sum(a[x + y] for y in range(4) if x + y < 9) for x in range(8)]
    np.testing.assert_allclose(b, want, rtol=1e-6)


def test_guard_on_the_lane_only_gives_a_vector_body_with_its_loop_and_a_tail():
    """for j in vectorized(8): for k in range(4): if i0 + j < n: B[i0 + j] += A[k]."""
    n = Var("n")
    A, B = buffer("A", (4,)), buffer("B", (n,))
    j, k = Var("j"), Var("k")
    body = IfThenElse(j < n, BufferStore(B, B[j] + A[k], (j,)))
    func = PrimFunc((A, B), loop(j, 8, loop(k, 4, body), V))
    after = simplify(vectorize_loops(func))
    assert _nodes(after, Ramp)
    a = np.random.rand(4).astype("float32")
    for size in (8, 5):
        b = np.zeros(size, "float32")
        eval_prim_func(after, a, b)
        np.testing.assert_allclose(b, np.full(size, a.sum()), rtol=1e-6)


def test_widened_inner_loop_variable_in_the_store_index_vectorizes():
    """B[int64(j)*4 + int64(k)]: a widened loop variable is still that loop's digit."""
    A, B = buffer("A", (4,)), buffer("B", (32,))
    j, k = Var("j"), Var("k")
    index = Cast("int64", j) * 4 + Cast("int64", k)
    func = PrimFunc((A, B), loop(j, 8, loop(k, 4, BufferStore(B, A[k] + 1.0, (index,))), V))
    after = simplify(vectorize_loops(func))
    assert _nodes(after, Ramp)
    a, b = np.random.rand(4).astype("float32"), np.zeros(32, "float32")
    eval_prim_func(after, a, b)
    np.testing.assert_allclose(b, np.tile(a + 1.0, 8), rtol=1e-6)


@pytest.mark.parametrize("inner", ["vectorized", "unrolled"])
def test_vectorized_loop_around_a_vectorized_or_unrolled_loop(inner):
    """The inner vectorized loop becomes vector code first, so the outer one stays serial;
    an unrolled loop inside stays a loop around vector code, copied by unroll_loops."""
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=4)
    jo, ji = s[C].split(j, factor=4)
    s[C].reorder(io, jo, ii, C.op.reduce_axis[0], ji)
    if inner == "vectorized":
        s[C].vectorize(ji)
    else:
        s[C].unroll(ji)
    s[C].vectorize(ii)
    assert _nodes(mlc.lower(s, [A, B, C]), Ramp)
    f = mlc.build(s, [A, B, C])
    a, b = np.random.rand(16, 16).astype("float32"), np.random.rand(16, 16).astype("float32")
    c = np.zeros((16, 16), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
