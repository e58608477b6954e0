"""structural_equal / assert_structural_equal / structural_hash."""

import pytest
from tir_programs import make_matmul, rng

from mlc.tir import (
    Block,
    BlockRealize,
    Buffer,
    BufferStore,
    For,
    ForKind,
    IterVar,
    LetStmt,
    PrimFunc,
    Range,
    SizeVar,
    Var,
    assert_structural_equal,
    const,
    structural_equal,
    structural_hash,
)


def test_alpha_equivalent_functions_are_equal():
    a, b = make_matmul(), make_matmul(names=("x", "y", "z"))
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
    assert_structural_equal(a, b)


def test_different_extents_differ_and_report_the_place():
    a, b = make_matmul(1024), make_matmul(512)
    assert not structural_equal(a, b)
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(a, b)
    msg = str(info.value)
    assert "params.[0].shape.[0].value" in msg
    assert "lhs: 1024" in msg and "rhs: 512" in msg
    assert "# <-- differs" in msg


def test_difference_inside_body_marks_the_statement():
    a, b = make_matmul(), make_matmul()
    blk = b.body.block.body.body.body.body.block
    store = blk.body
    new_store = BufferStore(store.buffer, store.value.a * const(2.0), store.indices)
    import dataclasses

    new_blk = dataclasses.replace(blk, body=new_store)
    realize = b.body.block.body.body.body.body
    new_realize = dataclasses.replace(realize, block=new_blk)
    k_loop = dataclasses.replace(b.body.block.body.body.body, body=new_realize)
    j_loop = dataclasses.replace(b.body.block.body.body, body=k_loop)
    i_loop = dataclasses.replace(b.body.block.body, body=j_loop)
    root = dataclasses.replace(b.body, block=dataclasses.replace(b.body.block, body=i_loop))
    b2 = b.with_body(root)
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(a, b2)
    msg = str(info.value)
    assert "C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]  # <-- differs" in msg
    assert "C[vi, vj] = C[vi, vj] * 2.0  # <-- differs" in msg


def test_free_vars_must_be_identical_unless_mapped():
    x, y = Var("x"), Var("x")
    assert structural_equal(x + 1, x + 1)
    assert not structural_equal(x + 1, y + 1)
    assert structural_equal(x + 1, y + 1, map_free_vars=True)
    # the mapping is one to one
    assert not structural_equal(x + x, x + y, map_free_vars=True)


def test_loop_vars_map_by_position_and_dtype_matters():
    A = Buffer("A", (const(8),), "float32")
    i, j = Var("i"), Var("j")
    s1 = For(i, const(0), const(8), ForKind.SERIAL, BufferStore(A, const(1.0), (i,)))
    s2 = For(j, const(0), const(8), ForKind.SERIAL, BufferStore(A, const(1.0), (j,)))
    s3 = For(j, const(0), const(8), ForKind.PARALLEL, BufferStore(A, const(1.0), (j,)))
    assert structural_equal(s1, s2)
    assert not structural_equal(s1, s3)  # kind
    k64 = Var("k", "int64")
    s4 = For(k64, const(0, "int64"), const(8, "int64"), ForKind.SERIAL,
             BufferStore(A, const(1.0), (k64,)))
    assert not structural_equal(s1, s4)
    s5 = For(i, const(0), const(8), ForKind.SERIAL, BufferStore(A, const(1.0), (i,)),
             annotations=(("pragma_unroll", 1),))
    assert not structural_equal(s1, s5)  # annotations


def test_let_vars_and_symbolic_shapes_map():
    n1, n2 = SizeVar("n"), SizeVar("m")
    A1 = Buffer("A", (n1,), "float32")
    A2 = Buffer("B", (n2,), "float32")
    i1, i2 = Var("i"), Var("i")
    t1, t2 = Var("t"), Var("u")
    f1 = PrimFunc((A1,), For(i1, const(0), n1, ForKind.SERIAL,
                             LetStmt(t1, i1 * 2, BufferStore(A1, const(0.0), (t1,)))))
    f2 = PrimFunc((A2,), For(i2, const(0), n2, ForKind.SERIAL,
                             LetStmt(t2, i2 * 2, BufferStore(A2, const(0.0), (t2,)))))
    assert structural_equal(f1, f2)
    assert structural_hash(f1) == structural_hash(f2)
    f3 = PrimFunc((A2,), For(i2, const(0), n2, ForKind.SERIAL,
                             LetStmt(t2, i2 * 3, BufferStore(A2, const(0.0), (t2,)))))
    assert not structural_equal(f1, f3)


def test_block_names_and_alloc_buffers():
    B1 = Buffer("B", (const(4),), "float32", scope="local")
    B2 = Buffer("T", (const(4),), "float32", scope="local")
    B3 = Buffer("T", (const(4),), "float32", scope="shared")

    def blk(name, buf):
        return Block(name, (), (), (), BufferStore(buf, const(0.0), (const(0),)),
                     alloc_buffers=(buf,))

    assert structural_equal(blk("x", B1), blk("x", B2))
    assert not structural_equal(blk("x", B1), blk("y", B2))
    assert not structural_equal(blk("x", B1), blk("x", B3))


def test_block_iter_vars_map():
    A = Buffer("A", (const(4),), "float32")
    v1, v2, i = Var("v"), Var("w"), Var("i")

    def realize(v):
        b = Block("b", (IterVar(v, rng(4)),), (), (), BufferStore(A, const(0.0), (v,)))
        return BlockRealize((i,), const(True), b)

    assert structural_equal(realize(v1), realize(v2))
    assert structural_hash(realize(v1)) == structural_hash(realize(v2))
    assert not structural_equal(Range(const(0), const(4)), Range(const(0), const(5)))
