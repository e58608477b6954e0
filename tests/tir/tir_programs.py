"""Small hand-built programs shared by the tir tests."""

from mlc.tir import (
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    For,
    ForKind,
    IterKind,
    IterVar,
    PrimFunc,
    Range,
    Var,
    const,
)


def rng(n, lo=0):
    return Range(const(lo), const(n))


def point(buf, *idx):
    return BufferRegion(buf, tuple(Range(i, const(1)) for i in idx))


def make_matmul(n=1024, names=("i", "j", "k")):
    """C[i, j] += A[i, k] * B[k, j] as create_prim_func would build it."""
    A = Buffer("A", (const(n), const(n)), "float32")
    B = Buffer("B", (const(n), const(n)), "float32")
    C = Buffer("C", (const(n), const(n)), "float32")
    i, j, k = (Var(x) for x in names)
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    block = Block(
        "C",
        (IterVar(vi, rng(n)), IterVar(vj, rng(n)), IterVar(vk, rng(n), IterKind.REDUCE)),
        (point(A, vi, vk), point(B, vk, vj)),
        (point(C, vi, vj),),
        BufferStore(C, C[vi, vj] + A[vi, vk] * B[vk, vj], (vi, vj)),
        init=BufferStore(C, const(0.0), (vi, vj)),
    )
    realize = BlockRealize((i, j, k), const(True), block)
    loops = For(
        i, const(0), const(n), ForKind.SERIAL,
        For(j, const(0), const(n), ForKind.SERIAL,
            For(k, const(0), const(n), ForKind.SERIAL, realize)),
    )
    root = BlockRealize((), const(True), Block("root", (), (), (), loops))
    return PrimFunc((A, B, C), root, "matmul")
