"""Schedules for ``target="vdla"`` written the notes' way, shared by tests, benchmarks and
the grader::

    s, (A, B, C) = gemm_schedule(256, 256, 256, block=64, kblock=128, threads=2)
    f = mlc.build(s, [A, B, C], target="vdla")
"""

from __future__ import annotations

from typing import Any

from mlc import te
from mlc.vdla.config import acc_buffer, inp_buffer, wgt_buffer
from mlc.vdla.intrin import gemm8x8


def gemm_compute(m: int, n: int, k: int) -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    """``C[y, x] = sum_k A[y, k] * B[x, k]`` in int8 with int32 sums (the layout the GEMM
    core reads: both operands row-major in K)."""
    A = te.placeholder((m, k), name="A", dtype="int8")
    B = te.placeholder((n, k), name="B", dtype="int8")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda y, x: te.sum(
        A[y, r].astype("int32") * B[x, r].astype("int32"), axis=r), name="C")
    return A, B, C


def gemm_schedule(m: int, n: int, k: int, block: int = 64, kblock: int | None = None,
                  threads: int = 1, tensorize: bool = True
                  ) -> tuple[te.Schedule, list[te.Tensor]]:
    """Output blocks of ``block x block``, ``kblock`` (default ``block``) columns of K per
    step, both operands cached in the accelerator's buffers at each step, the accumulator for
    the whole block, the 8 x 8 x 8 tile tensorized with ``vdla.gemm8x8`` (left a loop nest
    with ``tensorize=False``, to see what the compiler refuses); ``threads`` virtual threads
    split the rows of blocks."""
    kblock = kblock or block
    A, B, C = gemm_compute(m, n, k)
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, acc_buffer)
    AL = s.cache_read(A, inp_buffer, [CL])
    BL = s.cache_read(B, wgt_buffer, [CL])
    y, x = s[C].op.axis
    yo, xo, _, _ = s[C].tile(y, x, block, block)
    if threads > 1:
        tv, _ = s[C].split(yo, nparts=threads)
        s[C].bind(tv, te.thread_axis("vthread"))
    s[CL].compute_at(s[C], xo)
    yc, xc = s[CL].op.axis
    (kc,) = s[CL].op.reduce_axis
    ko, ki = s[CL].split(kc, factor=kblock)
    yco, yci = s[CL].split(yc, factor=8)
    xco, xci = s[CL].split(xc, factor=8)
    kio, kii = s[CL].split(ki, factor=8)
    s[CL].reorder(ko, yco, xco, kio, yci, xci, kii)
    s[AL].compute_at(s[CL], ko)
    s[BL].compute_at(s[CL], ko)
    if tensorize:
        s[CL].tensorize(yci, gemm8x8)
    return s, [A, B, C]


def dense_compute(m: int, n: int, k: int, shift: int | None = None, relu: bool = False
                  ) -> tuple[te.Tensor, te.Tensor, te.Tensor, te.Tensor, te.Tensor, te.Tensor]:
    """A quantized dense layer as the accelerator runs it, GEMM then ALU then STORE::

        C[y, x] = sum_k A[y, k] * W[x, k]                    int8 x int8 -> int32 (GEMM)
        D[y, x] = C[y, x] + Bias[y % 8, x]                   the bias, one row of tiles (ALU)
                  relu: max(., 0); shift: min((. + 2**(shift-1)) >> shift, 127)
        O[y, x] = int8(D[y, x])   (int32 when shift is None)  the narrowing STORE

    ``Bias`` is ``(8, n)`` int32, its 8 rows equal (the host repeats the bias once per row
    of a tile), so it is loaded once and added to every row of tiles. ``shift`` is the
    requantization to the next layer's int8 scale: round half up, then clip (to 0..127
    after a relu, else -128..127). Returns ``(A, W, Bias, C, D, O)``."""
    A = te.placeholder((m, k), name="A", dtype="int8")
    W = te.placeholder((n, k), name="W", dtype="int8")
    bias = te.placeholder((8, n), name="Bias", dtype="int32")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda y, x: te.sum(
        A[y, r].astype("int32") * W[x, r].astype("int32"), axis=r), name="C")

    def epilogue(y: Any, x: Any) -> Any:
        v = C[y, x] + bias[y % 8, x]
        if relu:
            v = te.max(v, 0)
        if shift is not None:
            if shift > 0:
                v = (v + (1 << (shift - 1))) // (1 << shift)
            v = te.min(v, 127)
            if not relu:
                v = te.max(v, -128)
        return v

    D = te.compute((m, n), epilogue, name="D")
    O = te.compute((m, n), lambda y, x: D[y, x].astype("int8" if shift is not None
                                                        else "int32"), name="O")
    return A, W, bias, C, D, O


def dense_schedule(m: int, n: int, k: int, shift: int | None = None, relu: bool = False,
                   block: int = 8, threads: int = 1
                   ) -> tuple[te.Schedule, list[te.Tensor]]:
    """The dense layer of :func:`dense_compute` scheduled for VDLA: ``block`` rows of the
    output (all ``n`` columns) at a time, split between ``threads`` virtual threads; the
    weights and the bias loaded once (weight-stationary: they must fit in wgt_buffer and
    acc_buffer), the rows of A loaded per block; the GEMM tensorized with ``vdla.gemm8x8``,
    the epilogue on the ALU in acc_buffer (``set_scope``), the result stored as int8.
    Returns ``s, [A, W, Bias, O]``."""
    A, W, bias, C, D, O = dense_compute(m, n, k, shift, relu)
    s = te.create_schedule(O.op)
    s[C].set_scope(acc_buffer)
    s[D].set_scope(acc_buffer)
    AL = s.cache_read(A, inp_buffer, [C])
    WL = s.cache_read(W, wgt_buffer, [C])
    s.cache_read(bias, acc_buffer, [D])
    y, x = s[O].op.axis
    yo, xo, _, _ = s[O].tile(y, x, block, n)
    if threads > 1:
        tv, _ = s[O].split(yo, nparts=threads)
        s[O].bind(tv, te.thread_axis("vthread"))
    s[C].compute_at(s[O], xo)
    s[D].compute_at(s[O], xo)
    yc, xc = s[C].op.axis
    (kc,) = s[C].op.reduce_axis
    yco, yci = s[C].split(yc, factor=8)
    xco, xci = s[C].split(xc, factor=8)
    kco, kci = s[C].split(kc, factor=8)
    s[C].reorder(yco, xco, kco, yci, xci, kci)
    s[AL].compute_at(s[C], yco)
    del WL  # computed at the root: every weight tile once
    s[C].tensorize(yci, gemm8x8)
    return s, [A, W, bias, O]
