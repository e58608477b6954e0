"""flatten_buffers: multi-dimensional indices become one offset into a 1-D buffer."""

import numpy as np
from lowering_helpers import assert_ir_equal, buffer, check_lowered, eval_prim_func, loop

from mlc.tir.expr import BufferLoad, Cast, IntImm, Var, const
from mlc.tir.functor import post_order_visit
from mlc.tir.stmt import Allocate, Buffer, BufferStore, PrimFunc, seq
from mlc.transform import flatten_buffers, lower
from mlc.transform.flatten_buffers import buffer_numel, buffer_strides


def _flat_buffers(func):
    found = []
    post_order_visit(func.body, lambda n: found.append(n.buffer)
                     if isinstance(n, (BufferLoad, BufferStore, Allocate)) else None)
    return found


def test_row_major_offsets_with_a_symbolic_shape():
    n = Var("n")
    A, B = Buffer("A", (n, 8)), Buffer("B", (n, 8))
    i, j = Var("i"), Var("j")
    before = PrimFunc((A, B), loop(i, n, loop(j, 8, BufferStore(B, A[i, j] * 2.0, (i, j)))))
    after = flatten_buffers(before)
    Af = Buffer("A", (n * 8,), data=A.data)
    Bf = Buffer("B", (n * 8,), data=B.data)
    # a symbolic size may be anything when the function is called: offsets are int64
    flat = Cast("int64", i) * IntImm(8, "int64") + Cast("int64", j)
    expected = PrimFunc((A, B), loop(i, n, loop(j, 8, BufferStore(
        Bf, Af[flat] * 2.0, (flat,)))))
    assert_ir_equal(after, expected)
    assert after.params[0] is A  # the parameters keep their shapes
    bufs = _flat_buffers(after)
    assert {id(b.data) for b in bufs} == {id(A.data), id(B.data)}
    # one flat buffer per original buffer
    assert len({id(b) for b in bufs}) == 2


def test_three_dimensions_and_zero_dimensions():
    A = Buffer("A", (2, 3, 4))
    S = Buffer("S", ())
    assert [str(s) for s in buffer_strides(A)] == ["12", "4", "1"]
    i, j, k = Var("i"), Var("j"), Var("k")
    before = PrimFunc((A, S), BufferStore(S, A[i, j, k], ()))
    after = flatten_buffers(before)
    Sf = Buffer("S", (const(1),), data=S.data)
    Af = Buffer("A", (const(24),), data=A.data)
    assert_ir_equal(after, PrimFunc((A, S), BufferStore(Sf, Af[i * 12 + j * 4 + k], (const(0),))))


def test_explicit_strides_from_storage_align():
    T = buffer("T", (4, 6), scope="local", strides=(const(8), const(1)))
    A = buffer("A", (4, 6))
    i, j, i2, j2 = Var("i"), Var("j"), Var("i"), Var("j")
    assert str(buffer_numel(T)) == "32"  # strides[0] * shape[0], padding included
    before = PrimFunc((A,), Allocate(T, seq(
        loop(i, 4, loop(j, 6, BufferStore(T, A[i, j], (i, j)))),
        loop(i2, 4, loop(j2, 6, BufferStore(A, T[i2, j2] + 1.0, (i2, j2)))),
    )))
    after = flatten_buffers(before)
    alloc = after.body
    assert isinstance(alloc, Allocate)
    assert alloc.buffer.data is T.data and str(alloc.buffer.shape[0]) == "32"
    assert alloc.buffer.scope == "local"
    lowered = lower(before)
    check_lowered(lowered)
    a = np.random.rand(4, 6).astype("float32")
    expected = a + 1.0
    eval_prim_func(lowered, a)
    np.testing.assert_allclose(a, expected)
