"""mlc.testing.eval_prim_func on hand-built programs in both forms of the loop IR."""

from __future__ import annotations

import numpy as np
import pytest

from mlc import te, tir
from mlc.testing import InterpreterError, eval_prim_func, interpreter_source
from mlc.tir.expr import (
    Broadcast,
    BufferLoad,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    IterKind,
    IterVar,
    Let,
    Mod,
    Ramp,
    Range,
    Select,
    SizeVar,
    Var,
    const,
)
from mlc.tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    Buffer,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    seq,
)


def loop(v: Var, extent, body, lo=0) -> For:
    return For(v, const(lo) if isinstance(lo, int) else lo,
               const(extent) if isinstance(extent, int) else extent, ForKind.SERIAL, body)


def test_lowered_vector_program_with_tail_allocate_and_let():
    # B = A * 2 on flat buffers: a vector body of 4 lanes over a local buffer, then a tail
    n = SizeVar("n")
    A, B = Buffer("A", (n,)), Buffer("B", (n,))
    tmp = Buffer("tmp", (const(4),), scope="local")
    io, r, x = Var("io"), Var("r"), Var("x")
    lanes = Ramp(const(0), const(1), 4)
    vec = Ramp(io * 4, const(1), 4)
    body = seq(
        loop(io, n // 4, seq(
            BufferStore(tmp, BufferLoad(A, (vec,)) * Broadcast(const(2.0), 4), (lanes,)),
            BufferStore(B, BufferLoad(tmp, (lanes,)), (vec,)),
        )),
        loop(r, n % 4, LetStmt(x, n // 4 * 4 + r, IfThenElse(
            x < n, BufferStore(B, BufferLoad(A, (x,)) * 2.0, (x,))))),
    )
    func = PrimFunc((A, B), Allocate(tmp, body))
    a = np.arange(11, dtype="float32")
    b = np.zeros(11, dtype="float32")
    eval_prim_func(func, a, b)
    np.testing.assert_array_equal(b, a * 2)
    assert "np.arange(4)" in interpreter_source(func)


def test_flattened_buffers_share_the_param_data():
    # the lowered form keeps 2-D params and indexes a flat Buffer with the same data var
    m, n = SizeVar("m"), SizeVar("n")
    A, B = Buffer("A", (m, n)), Buffer("B", (m, n))
    fa = Buffer("A", (m * n,), data=A.data)
    fb = Buffer("B", (m * n,), data=B.data)
    i, j = Var("i"), Var("j")
    store = BufferStore(fb, BufferLoad(fa, ((m - 1 - i) * n + j,)) + 1.0, (i * n + j,))
    func = PrimFunc((A, B), loop(i, m, loop(j, n, store)))
    a = np.arange(12, dtype="float32").reshape(3, 4)
    b = np.zeros((3, 4), dtype="float32")
    eval_prim_func(func, a, b)
    np.testing.assert_array_equal(b, a[::-1] + 1)


def test_vector_select_evaluates_only_active_lanes():
    n = SizeVar("n")
    A, B = Buffer("A", (n,)), Buffer("B", (n + 3,))
    io = Var("io")
    vec = Ramp(io * 4, const(1), 4)
    guarded = Select(vec < Broadcast(n, 4), BufferLoad(A, (vec,)), Broadcast(const(-1.0), 4))
    func = PrimFunc((A, B), loop(io, (n + 3) // 4, BufferStore(B, guarded, (vec,))))
    a = np.arange(5, dtype="float32")
    b = np.zeros(8, dtype="float32")
    eval_prim_func(func, a, b)
    np.testing.assert_array_equal(b, [0, 1, 2, 3, 4, -1, -1, -1])


def test_integer_semantics_floor_and_trunc():
    A = Buffer("A", (const(6),), "int32")
    out = [Buffer(f"O{k}", (const(6),), "int32") for k in range(5)]
    i = Var("i")
    a = BufferLoad(A, (i,))
    exprs = [FloorDiv(a, const(4)), FloorMod(a, const(4)), Div(a, const(4)),
             Mod(a, const(4)), Cast("int32", Cast("float32", a) / const(4.0))]
    stores = seq(*(BufferStore(o, e, (i,)) for o, e in zip(out, exprs)))
    func = PrimFunc((A, *out), loop(i, 6, stores))
    av = np.array([-9, -4, -1, 0, 5, 9], dtype="int32")
    res = [np.zeros(6, dtype="int32") for _ in out]
    eval_prim_func(func, av, *res)
    np.testing.assert_array_equal(res[0], av // 4)
    np.testing.assert_array_equal(res[1], av % 4)
    np.testing.assert_array_equal(res[2], np.trunc(av / 4).astype("int32"))
    np.testing.assert_array_equal(res[3], np.fmod(av, 4))
    np.testing.assert_array_equal(res[4], np.trunc(av / 4).astype("int32"))


def test_let_expression_and_scalar_select_laziness():
    A, B = Buffer("A", (const(4),)), Buffer("B", (const(6),))
    i, t = Var("i"), Var("t")
    value = Let(t, i - 1, Select((t >= 0) & (t < 4), BufferLoad(A, (t,)), const(0.0)))
    func = PrimFunc((A, B), loop(i, 6, BufferStore(B, value, (i,))))
    a = np.array([1, 2, 3, 4], dtype="float32")
    b = np.zeros(6, dtype="float32")
    eval_prim_func(func, a, b)
    np.testing.assert_array_equal(b, [0, 1, 2, 3, 4, 0])


def test_block_init_runs_at_reduce_start_and_predicate_guards():
    # C[i] = sum_{k in [2, 5)} A[i, k], i split by 3 over an extent of 4 (predicate)
    A, C = Buffer("A", (const(4), const(5))), Buffer("C", (const(4),))
    io, ii, k = Var("io"), Var("ii"), Var("k")
    vi, vk = Var("vi"), Var("vk")
    block = Block(
        "C",
        (IterVar(vi, Range(const(0), const(4))), IterVar(vk, Range(const(2), const(3)),
                                                           IterKind.REDUCE)),
        (), (),
        BufferStore(C, BufferLoad(C, (vi,)) + BufferLoad(A, (vi, vk)), (vi,)),
        init=BufferStore(C, const(0.0), (vi,)),
    )
    realize = BlockRealize((io * 3 + ii, k), io * 3 + ii < 4, block)
    nest = loop(io, 2, loop(ii, 3, loop(k, 3, realize, lo=2)))
    root = Block("root", (), (), (), nest)
    func = PrimFunc((A, C), BlockRealize((), const(True), root))
    a = np.arange(20, dtype="float32").reshape(4, 5)
    c = np.full(4, 99, dtype="float32")
    eval_prim_func(func, a, c)
    np.testing.assert_array_equal(c, a[:, 2:].sum(axis=1))


def test_out_of_bounds_and_bad_arguments_raise():
    A, B = Buffer("A", (const(4),)), Buffer("B", (const(4),))
    i = Var("i")
    func = PrimFunc((A, B), loop(i, 4, BufferStore(B, BufferLoad(A, (i - 1,)), (i,))))
    with pytest.raises(InterpreterError, match=r"out-of-bounds access A\[\(-1,\)\]"):
        eval_prim_func(func, np.zeros(4, "float32"), np.zeros(4, "float32"))
    with pytest.raises(InterpreterError, match="argument B must be float32, got float64"):
        eval_prim_func(func, np.zeros(4, "float32"), np.zeros(4))
    with pytest.raises(InterpreterError, match=r"takes 2 arrays \(A, B\), got 1"):
        eval_prim_func(func, np.zeros(4, "float32"))
    with pytest.raises(InterpreterError, match=r"argument A must have shape \(4,\)"):
        eval_prim_func(func, np.zeros(5, "float32"), np.zeros(4, "float32"))


def test_unwritten_intermediate_reads_are_nan():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i], name="B")
    C = te.compute((4,), lambda i: B[i] + 1.0, name="C")
    func = te.create_prim_func([A, C])
    # drop the block that writes B: C now reads uninitialised memory, which shows as NaN
    root = func.body.block
    broken = func.with_body(BlockRealize((), const(True), Block(
        "root", (), (), (), root.body.seq[1], alloc_buffers=root.alloc_buffers)))
    c = np.zeros(4, "float32")
    eval_prim_func(broken, np.ones(4, "float32"), c)
    assert np.isnan(c).all()


def test_math_calls_keep_dtype():
    A, B = Buffer("A", (const(3),), "float16"), Buffer("B", (const(3),), "float16")
    i = Var("i")
    func = PrimFunc((A, B), loop(i, 3, BufferStore(B, te.exp(BufferLoad(A, (i,))), (i,))))
    a = np.array([0, 1, 2], dtype="float16")
    b = np.zeros(3, dtype="float16")
    eval_prim_func(func, a, b)
    np.testing.assert_allclose(b, np.exp(a), rtol=1e-3)
    assert isinstance(IntImm(1), tir.PrimExpr)


def test_lowered_te_program_matches_numpy():
    from mlc import transform as lower
    n = te.var("n")
    A = te.placeholder((n, 6), name="A")
    k = te.reduce_axis((0, 6), name="k")
    S = te.compute((n,), lambda i: te.sum(A[i, k] * A[i, k], axis=k), name="S")
    func = lower.lower(te.create_prim_func([A, S]))
    a = np.random.default_rng(1).standard_normal((5, 6)).astype("float32")
    s = np.zeros(5, "float32")
    eval_prim_func(func, a, s)
    np.testing.assert_allclose(s, (a * a).sum(axis=1), rtol=1e-5)


def test_assert_same_result_catches_a_changed_program():
    from mlc.testing import assert_same_result

    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    B2 = te.compute((n,), lambda i: A[i] + A[i], name="B")
    B3 = te.compute((n,), lambda i: A[i] * 3.0, name="B")
    f, f2, f3 = (te.create_prim_func([A, t]) for t in (B, B2, B3))
    assert_same_result(f, f2, sizes={"n": 9})
    with pytest.raises(AssertionError, match="buffer 'B' differs"):
        assert_same_result(f, f3, sizes={"n": 9})
    with pytest.raises(InterpreterError, match="symbolic size 'n'"):
        assert_same_result(f, f2)
