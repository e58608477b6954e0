"""The printer: exact text for hand-built programs."""

import textwrap

from tir_programs import make_matmul, point, rng

from mlc.tir import (
    Allocate,
    Block,
    BlockRealize,
    Broadcast,
    Buffer,
    BufferStore,
    Call,
    Cast,
    Div,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterVar,
    LetStmt,
    Max,
    Min,
    Mod,
    PrimFunc,
    Ramp,
    Select,
    Var,
    const,
    seq,
)
from mlc.tir.printer import expr_to_str, to_str
from mlc.tir.printer_html import to_html

PARAMS = ", ".join(f'{name}: Buffer((1024, 1024), "float32")' for name in "ABC")
MATMUL = f"@prim_func\ndef matmul({PARAMS}):\n" + '''\
    for i in range(1024):
        for j in range(1024):
            for k in range(1024):
                with block("C"):
                    vi = axis.spatial(1024, i)
                    vj = axis.spatial(1024, j)
                    vk = axis.reduce(1024, k)
                    reads(A[vi, vk], B[vk, vj])
                    writes(C[vi, vj])
                    with init():
                        C[vi, vj] = 0.0
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]'''


def test_matmul_exact_text():
    f = make_matmul()
    assert to_str(f) == MATMUL
    assert repr(f) == MATMUL and str(f) == MATMUL


def split_program():
    A = Buffer("A", (const(1000),), "float32")
    B = Buffer("B", (const(1000),), "float32")
    i0, i1, vi = Var("i_0"), Var("i_1"), Var("vi")
    cache = Buffer("A_local", (const(32),), "float32", scope="local")
    block = Block(
        "B",
        (IterVar(vi, rng(1000)),),
        (point(A, vi),),
        (point(B, vi),),
        BufferStore(B, A[vi] * const(2.0), (vi,)),
        alloc_buffers=(cache,),
    )
    realize = BlockRealize((i0 * 32 + i1,), i0 * 32 + i1 < 1000, block)
    body = For(i0, const(0), const(32), ForKind.PARALLEL,
               For(i1, const(0), const(32), ForKind.VECTORIZED, realize))
    return PrimFunc((A, B), body, "scale"), realize, body


def test_split_predicated_loop_nest():
    f, _, _ = split_program()
    assert to_str(f) == textwrap.dedent('''\
        @prim_func
        def scale(A: Buffer((1000,), "float32"), B: Buffer((1000,), "float32")):
            for i_0 in parallel(32):
                for i_1 in vectorized(32):
                    with block("B"):
                        vi = axis.spatial(1000, i_0 * 32 + i_1)
                        where(i_0 * 32 + i_1 < 1000)
                        reads(A[vi])
                        writes(B[vi])
                        A_local = alloc_buffer((32,), "float32", scope="local")
                        B[vi] = A[vi] * 2.0''')


def test_marks_single_and_several():
    f, realize, loop = split_program()
    out = to_str(f, mark=realize)
    assert '            with block("B"):  # <-- here' in out.splitlines()
    out = to_str(f, mark={loop: "cannot parallelize", realize.block: "this block"})
    lines = out.splitlines()
    assert "    for i_0 in parallel(32):  # <-- cannot parallelize" in lines
    assert '            with block("B"):  # <-- this block' in lines


def test_loop_kinds_and_ranges():
    A = Buffer("A", (const(64),), "float32")
    i, j, t, u = Var("i"), Var("j"), Var("t"), Var("u")
    body = BufferStore(A, const(1.5), (i + j + t + u,))
    s = For(i, const(2), const(8), ForKind.SERIAL,
            For(j, const(0), const(4), ForKind.UNROLLED,
                For(t, const(0), const(32), ForKind.THREAD_BINDING,
                    For(u, const(0), const(8), ForKind.SERIAL, body,
                        annotations=(("pragma_unroll", 1),)),
                    thread_binding="threadIdx.x")))
    assert to_str(s) == textwrap.dedent('''\
        for i in range(2, 10):
            for j in unroll(4):
                for t in thread_binding(32, "threadIdx.x"):
                    for u in serial(8, annotations={"pragma_unroll": 1}):
                        A[i + j + t + u] = 1.5''')


def test_other_statements():
    A = Buffer("A", (const(4),), "int32")
    T = Buffer("T", (const(4),), "int32", scope="shared")
    x, n = Var("x"), Var("n")
    s = Allocate(T, LetStmt(x, n * 2, seq(
        IfThenElse(x < 4, BufferStore(T, x, (x,)), Evaluate(Call("int32", "noop", ()))),
        BufferStore(A, T[0], (const(0),)),
    )))
    assert to_str(s) == textwrap.dedent('''\
        T = alloc_buffer((4,), "int32", scope="shared")
        x = n * 2
        if x < 4:
            T[x] = x
        else:
            noop()
        A[0] = T[0]''')


def test_precedence():
    a, b, c = Var("a"), Var("b"), Var("c")
    cases = {
        (a + b) * c: "(a + b) * c",
        a - (b - c): "a - (b - c)",
        a - b - c: "a - b - c",
        a + b * c: "a + b * c",
        a // (b * c): "a // (b * c)",
        (a // b) * c: "a // b * c",
        (a + b) % c: "(a + b) % c",
        (a < b) & (b < c) | (a == c): "a < b and b < c or a == c",
        (a < b) & ((b < c) | (a == c)): "a < b and (b < c or a == c)",
        ~(a < b): "not a < b",
        Min(a, b + c) - Max(a, b): "min(a, b + c) - max(a, b)",
        Select(a < b, a, b * -1): "select(a < b, a, b * -1)",
        Div(a, b): "truncdiv(a, b)",
        Mod(a, b): "truncmod(a, b)",
    }
    for e, text in cases.items():
        assert expr_to_str(e) == text


def test_constants_casts_and_vectors():
    x = Var("x")
    f = Var("f", "float32")
    assert expr_to_str(const(0.0)) == "0.0"
    assert expr_to_str(const(1.5) * f) == "1.5 * f"
    assert expr_to_str(f / const(2.0)) == "f / 2.0"
    assert expr_to_str(const(True)) == "True"
    assert expr_to_str(const(False)) == "False"
    assert expr_to_str(const(5, "int64")) == "int64(5)"
    assert expr_to_str(const(2.5, "float64")) == "float64(2.5)"
    assert expr_to_str(Cast("float32", x)) == "float32(x)"
    assert expr_to_str(Call("float32", "exp", (f,))) == "exp(f)"
    assert expr_to_str(Ramp(x * 8, const(1), 8)) == "ramp(x * 8, 1, 8)"
    assert expr_to_str(Broadcast(const(0.0), 4)) == "broadcast(0.0, 4)"


def test_same_names_get_suffixes():
    i1, i2 = Var("i"), Var("i")
    assert expr_to_str(i1 + i2 * i1) == "i + i_1 * i"
    A1, A2 = Buffer("A", (const(4),)), Buffer("A", (const(4),))
    s = BufferStore(A1, A2[i1], (i1,))
    assert to_str(s) == "A[i] = A_1[i]"


def test_regions_and_buffers():
    from mlc.tir import BufferRegion, Range

    A = Buffer("A", (const(64), const(1024)), "float32")
    vi = Var("vi")
    br = BufferRegion(A, (Range(vi * 4, const(4)), Range(const(0), const(1024))))
    assert to_str(br) == "A[vi * 4:vi * 4 + 4, 0:1024]"
    assert to_str(A) == 'A = Buffer((64, 1024), "float32")'


def test_reduce_prints_with_reducer_name():
    from mlc.tir import CommReducer, IterKind, Reduce

    A = Buffer("A", (const(8), const(8)), "float32")
    x, y, i, k = Var("x", "float32"), Var("y", "float32"), Var("i"), Var("k")
    add = CommReducer(x, y, x + y, const(0.0), name="sum")
    r = Reduce(add, A[i, k], (IterVar(k, rng(8), IterKind.REDUCE),), const(True))
    assert expr_to_str(r) == "sum(A[i, k], axis=[k])"


def test_html_is_escaped_and_highlighted():
    f, realize, _ = split_program()
    out = to_html(f)
    assert out.startswith("<pre") and out.endswith("</pre>")
    assert "&lt;" in out and "<span" in out
    assert "&quot;B&quot;" in out and "color:#795e26" in out  # the block name
    assert f._repr_html_() == out
