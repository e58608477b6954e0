"""Schedules for ``target="vdla"`` written the notes' way, shared by tests, benchmarks and
the grader::

    s, (A, B, C) = gemm_schedule(256, 256, 256, block=64, kblock=128, threads=2)
    f = mlc.build(s, [A, B, C], target="vdla")
"""

from __future__ import annotations

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


def gemm_schedule(m: int, n: int, k: int, block: int = 64, kblock: int = 64,
                  threads: int = 1) -> tuple[te.Schedule, list[te.Tensor]]:
    """Output blocks of ``block x block``, ``kblock`` columns of K per step, both operands
    cached in the accelerator's buffers at each step, the accumulator for the whole block,
    the 8 x 8 x 8 tile tensorized with ``vdla.gemm8x8``; ``threads`` virtual threads split
    the rows of blocks."""
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
    s[CL].tensorize(yci, gemm8x8)
    return s, [A, B, C]
