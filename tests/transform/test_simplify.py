"""simplify: index arithmetic folds under loop bounds, proven guards and trivial loops go."""

from lowering_helpers import assert_ir_equal, loop

from mlc.tir.expr import Var, const
from mlc.tir.stmt import (
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    seq,
)
from mlc.transform import simplify


def test_fuse_and_split_arithmetic_folds():
    A, B = Buffer("A", (1024,)), Buffer("B", (1024,))
    i0, i1 = Var("i_0"), Var("i_1")
    fused = i0 * 32 + i1
    index = fused // 32 * 32 + fused % 32
    before = PrimFunc((A, B), loop(i0, 32, loop(i1, 32, IfThenElse(
        fused < 1024, BufferStore(B, A[index], (index,))))))
    expected = PrimFunc((A, B), loop(i0, 32, loop(i1, 32, BufferStore(
        B, A[i0 * 32 + i1], (i0 * 32 + i1,)))))
    assert_ir_equal(simplify(before), expected)


def test_guard_that_can_fail_stays():
    n = Var("n")
    A = Buffer("A", (n,))
    io, ii = Var("io"), Var("ii")
    body = IfThenElse(io * 4 + ii < n, BufferStore(A, const(0.0), (io * 4 + ii,)))
    before = PrimFunc((A,), loop(io, (n + 3) // 4, loop(ii, 4, body)))
    after = simplify(before)
    assert isinstance(after.body.body.body, IfThenElse)


def test_false_guard_and_empty_loops_disappear():
    A = Buffer("A", (8,))
    i, j = Var("i"), Var("j")
    keep = BufferStore(A, const(1.0), (i,))
    before = PrimFunc((A,), loop(i, 8, seq(
        IfThenElse(i >= 8, BufferStore(A, const(0.0), (i,)), keep),
        loop(j, 0, BufferStore(A, const(2.0), (j,))),
    )))
    assert_ir_equal(simplify(before), PrimFunc((A,), loop(i, 8, keep)))


def test_extent_one_loops_and_constant_lets_are_substituted():
    A = Buffer("A", (8,))
    i, j, x = Var("i"), Var("j"), Var("x")
    before = PrimFunc((A,), loop(i, 8, loop(j, 1, LetStmt(x, const(3), BufferStore(
        A, const(1.0), (i + j * x,))))))
    assert_ir_equal(simplify(before), PrimFunc((A,), loop(i, 8, BufferStore(A, const(1.0), (i,)))))


def test_thread_binding_of_extent_one_is_kept():
    A = Buffer("A", (8,))
    t = Var("threadIdx.x")
    bound = For(t, const(0), const(1), ForKind.THREAD_BINDING, BufferStore(A, const(1.0), (t,)),
                "threadIdx.x")
    after = simplify(PrimFunc((A,), bound))
    assert isinstance(after.body, For) and after.body.kind is ForKind.THREAD_BINDING


def test_nothing_left_is_a_no_op():
    A = Buffer("A", (8,))
    i = Var("i")
    never = IfThenElse(i < 0, BufferStore(A, const(1.0), (i,)))
    after = simplify(PrimFunc((A,), loop(i, 8, never)))
    assert isinstance(after.body, Evaluate)
