"""verify_well_formed: one test per kind of problem, each checking the message."""

import dataclasses

import pytest
from tir_programs import make_matmul, point, rng

from mlc.errors import VerifyError
from mlc.tir import (
    Allocate,
    Block,
    BlockRealize,
    Buffer,
    BufferStore,
    For,
    ForKind,
    IterVar,
    LetStmt,
    PrimFunc,
    SizeVar,
    Var,
    const,
    seq,
    verify_well_formed,
)

A = Buffer("A", (const(16),), "float32")


def loop(v, n, body, kind=ForKind.SERIAL):
    return For(v, const(0), n if not isinstance(n, int) else const(n), kind, body)


def func(body, params=(A,)):
    return PrimFunc(params, body, "f")


def expect(f, *fragments):
    with pytest.raises(VerifyError) as info:
        verify_well_formed(f)
    msg = str(info.value)
    for frag in fragments:
        assert frag in msg, msg
    return msg


def test_good_programs_pass():
    verify_well_formed(make_matmul())
    n = SizeVar("n")
    B = Buffer("B", (n,), "float32")
    i = Var("i")
    T = Buffer("T", (const(4),), "float32", scope="local")
    body = loop(i, n, Allocate(T, seq(
        BufferStore(T, const(1.0), (const(3),)),
        BufferStore(B, T[0], (i,)),
    )))
    verify_well_formed(func(body, (B,)))


def test_undefined_variable():
    i, x = Var("i"), Var("x")
    msg = expect(func(loop(i, 16, BufferStore(A, const(1.0), (x,)))),
                 "variable `x` is used but not defined")
    assert "A[x] = 1.0  # <-- variable `x` is used but not defined" in msg


def test_loop_variable_out_of_scope():
    i = Var("i")
    body = seq(loop(i, 16, BufferStore(A, const(1.0), (i,))), BufferStore(A, const(2.0), (i,)))
    expect(func(body), "variable `i` is used but not defined", "A[i] = 2.0  # <--")


def test_block_iter_var_used_outside_its_block():
    i, vi = Var("i"), Var("vi")
    blk = Block("B", (IterVar(vi, rng(16)),), (), (point(A, vi),),
                BufferStore(A, const(1.0), (vi,)))
    inner = loop(Var("j"), vi, BlockRealize((i,), const(True), blk))
    expect(func(loop(i, 16, inner)),
           'variable `vi` (an iteration variable of block "B") is used outside its block')


def test_variable_defined_twice():
    i = Var("i")
    body = loop(i, 4, loop(i, 4, BufferStore(A, const(1.0), (i,))))
    expect(func(body), "loop variable `i` is defined twice")
    x = Var("x")
    body = LetStmt(x, const(1), LetStmt(x, const(2), BufferStore(A, const(1.0), (x,))))
    expect(func(body), "let variable `x` is defined twice")


def test_buffer_not_in_scope():
    B = Buffer("B", (const(16),), "float32")
    i = Var("i")
    expect(func(loop(i, 16, BufferStore(A, B[i], (i,)))),
           "buffer `B` is used but is neither a parameter")


def test_allocated_buffer_used_after_its_scope():
    T = Buffer("T", (const(4),), "float32")
    body = seq(Allocate(T, BufferStore(T, const(0.0), (const(0),))),
               BufferStore(A, T[0], (const(0),)))
    expect(func(body), "buffer `T` is used")


def test_index_count_must_match_ndim():
    i = Var("i")
    expect(func(loop(i, 16, BufferStore(A, const(1.0), (i, i)))),
           "`A` has 1 dimensions but is indexed with 2 indices")


def test_constant_index_out_of_range():
    expect(func(BufferStore(A, const(1.0), (const(16),))),
           "index 16 is out of range for dimension 0 of `A` (extent 16)")


def test_an_index_under_a_guard_decided_false_is_dead_code():
    # the last copy of an unrolled, guarded loop: `if 16 < 16: A[16] = ...` never runs
    from mlc.tir.expr import LT
    from mlc.tir.stmt import IfThenElse

    store = BufferStore(A, const(1.0), (const(16),))
    verify_well_formed(func(IfThenElse(LT(const(16), const(16)), store)))
    expect(func(IfThenElse(LT(const(15), const(16)), store)),
           "index 16 is out of range for dimension 0 of `A` (extent 16)")


def test_store_dtype_must_match():
    expect(func(BufferStore(A, const(1, "int32"), (const(0),))),
           "stores a int32 value into `A` (float32): expected float32")


def test_bindings_count_must_match():
    f = make_matmul(8)
    realize = f.body.block.body.body.body.body
    bad = dataclasses.replace(realize, iter_values=realize.iter_values[:2])
    k = dataclasses.replace(f.body.block.body.body.body, body=bad)
    j = dataclasses.replace(f.body.block.body.body, body=k)
    i = dataclasses.replace(f.body.block.body, body=j)
    root = dataclasses.replace(f.body, block=dataclasses.replace(f.body.block, body=i))
    expect(f.with_body(root), 'block "C" has 3 iteration variables but 2 bindings',
           'with block("C"):  # <-- block "C" has 3')
