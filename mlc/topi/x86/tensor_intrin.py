"""Tensor intrinsics for x86 low-precision dot products, declared the way notebook 09 teaches.

``dot_16x4_u8i8`` describes one step of an int8 GEMM micro-kernel: 16 int32 outputs, each
adding the dot product of 4 unsigned activation bytes (the same 4 for all 16 outputs) with
its own 4 signed weight bytes. The weights are packed so that those 64 bytes are contiguous
(``W[n // 16, k // 4, (n % 16) * 4 + k % 4]``)::

    # description: what the instruction computes
    for j in range(16):
        for k in range(4):
            C[0, 0, j] += int32(A[0, k]) * int32(W[0, 0, j * 4 + k])

    # implementation: one call; vpdpbusd where the CPU has AVX-512 VNNI
    C[0, 0, 0:16] = dp4a(C[0, 0, 0:16], A[0, 0:4], W[0, 0, 0:64])

``dot_16x4_u7i8`` has the same description and calls ``dp4a_u7``: the activation bytes are
promised below 128, which makes AVX2's ``vpmaddubsw`` exact (:mod:`mlc.target.llvm.dot`).
``dot_16x2_bf16`` is the same for bfloat16 pairs (``vdpbf16ps``): 16 float32 outputs, each
adding 2 products; bfloat16 values are stored as their ``uint16`` bits.
"""

from __future__ import annotations

from mlc.tir.expr import Call, IterKind, IterVar, PrimExpr, Ramp, Range, Var, const
from mlc.tir.stmt import (
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    For,
    ForKind,
    PrimFunc,
    Stmt,
)
from mlc.tir.tensor_intrin import TensorIntrin

LANES = 16  # int32 / float32 outputs of one intrinsic call


def _buffers(group: int, a_dtype: str, b_dtype: str,
             acc_dtype: str) -> tuple[Buffer, Buffer, Buffer]:
    a = Buffer("A", (const(1), const(group)), a_dtype)
    w = Buffer("W", (const(1), const(1), const(LANES * group)), b_dtype)
    c = Buffer("C", (const(1), const(1), const(LANES)), acc_dtype)
    return a, w, c


def widen(e: PrimExpr, acc_dtype: str) -> PrimExpr:
    """An input element as the accumulator's type: ``int32(a)`` for bytes, the float32 that
    a bfloat16 stands for (``bf16_to_f32(bits)``) for ``uint16`` bits into float32."""
    if acc_dtype == "float32" and e.dtype == "uint16":
        return Call("float32", "bf16_to_f32", (e,))
    return e.astype(acc_dtype)


def _root(params: tuple[Buffer, ...], body: Stmt, name: str) -> PrimFunc:
    root = Block("root", (), (), (), body)
    return PrimFunc(params, BlockRealize((), const(True), root), name)


def _regions(a: Buffer, w: Buffer, c: Buffer) -> tuple[tuple[BufferRegion, ...],
                                                        tuple[BufferRegion, ...]]:
    def full(buf: Buffer) -> BufferRegion:
        return BufferRegion(buf, tuple(Range(const(0), s) for s in buf.shape))

    return (full(c), full(a), full(w)), (full(c),)


def dot_desc(group: int, a_dtype: str, b_dtype: str, acc_dtype: str, name: str) -> PrimFunc:
    """``C[0, 0, j] += acc(A[0, k]) * acc(W[0, 0, j * group + k])`` for j < 16, k < group."""
    a, w, c = _buffers(group, a_dtype, b_dtype, acc_dtype)
    j, k, vj, vk = Var("j"), Var("k"), Var("vj"), Var("vk")
    value = c[0, 0, vj] + widen(a[0, vk], acc_dtype) * widen(w[0, 0, vj * group + vk], acc_dtype)
    block = Block(
        name,
        (IterVar(vj, Range(const(0), const(LANES))),
         IterVar(vk, Range(const(0), const(group)), IterKind.REDUCE)),
        (BufferRegion(c, (Range(const(0), const(1)), Range(const(0), const(1)),
                          Range(vj, const(1)))),
         BufferRegion(a, (Range(const(0), const(1)), Range(vk, const(1)))),
         BufferRegion(w, (Range(const(0), const(1)), Range(const(0), const(1)),
                          Range(vj * group + vk, const(1))))),
        (BufferRegion(c, (Range(const(0), const(1)), Range(const(0), const(1)),
                          Range(vj, const(1)))),),
        BufferStore(c, value, (const(0), const(0), vj)),
    )
    nest: Stmt = BlockRealize((j, k), const(True), block)
    nest = For(k, const(0), const(group), ForKind.SERIAL, nest)
    nest = For(j, const(0), const(LANES), ForKind.SERIAL, nest)
    return _root((a, w, c), nest, name + "_desc")


def dot_impl(group: int, a_dtype: str, b_dtype: str, acc_dtype: str, op: str,
             name: str) -> PrimFunc:
    """``C[0, 0, 0:16] = op(C[0, 0, 0:16], A[0, 0:group], W[0, 0, 0:16 * group])``."""
    a, w, c = _buffers(group, a_dtype, b_dtype, acc_dtype)
    zero = const(0)
    lanes_c = Ramp(zero, const(1), LANES)
    call = Call(f"{acc_dtype}x{LANES}", op, (
        c[zero, zero, lanes_c], a[zero, Ramp(zero, const(1), group)],
        w[zero, zero, Ramp(zero, const(1), LANES * group)]))
    reads, writes = _regions(a, w, c)
    block = Block(op, (), reads, writes, BufferStore(c, call, (zero, zero, lanes_c)))
    return _root((a, w, c), BlockRealize((), const(True), block), name + "_impl")


def register_dp4a() -> str:
    """Register ``"dot_16x4_u8i8"`` (u8 x s8 -> int32, ``vpdpbusd``) and return its name."""
    name = "dot_16x4_u8i8"
    args = (4, "uint8", "int8", "int32")
    TensorIntrin.register(name, dot_desc(*args, name="dot"), dot_impl(*args, "dp4a", name))
    return name


def register_dp4a_u7() -> str:
    """Register ``"dot_16x4_u7i8"``: the description of ``dot_16x4_u8i8``, implemented by
    ``dp4a_u7`` (activation bytes below 128: exact as AVX2 ``vpmaddubsw`` + ``vpmaddwd``).
    Matching cannot see the values; the caller promises them (a 7-bit quantizer)."""
    name = "dot_16x4_u7i8"
    args = (4, "uint8", "int8", "int32")
    TensorIntrin.register(name, dot_desc(*args, name="dot"), dot_impl(*args, "dp4a_u7", name))
    return name


def register_dp2a_bf16() -> str:
    """Register ``"dot_16x2_bf16"`` (bf16 x bf16 -> float32, ``vdpbf16ps``); inputs are the
    ``uint16`` bits of bfloat16 values, converted exactly to float32 by the description."""
    name = "dot_16x2_bf16"
    args = (2, "uint16", "uint16", "float32")
    TensorIntrin.register(name, dot_desc(*args, name="dot"), dot_impl(*args, "dp2a_bf16", name))
    return name
