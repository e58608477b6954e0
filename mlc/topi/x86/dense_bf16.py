"""bfloat16 dense with float32 accumulation, tensorized onto ``vdpbf16ps`` (AVX512_BF16).

bfloat16 values are stored as their ``uint16`` bits (numpy has no bfloat16); the weight is
packed ``W[n // 16, k // 2, (n % 16) * 2 + k % 2]`` so one instruction's 32 values are
contiguous. Without AVX512_BF16 the same schedule runs as float32 multiply-adds.
"""

from __future__ import annotations

import numpy as np

from mlc import te, tir
from mlc.topi.x86.tensor_intrin import LANES, register_dp2a_bf16, widen


def to_bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits as uint16 (round to nearest even)."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def pack_weight_bf16(w: np.ndarray) -> np.ndarray:
    """``w`` (units x in, uint16 bf16 bits; units % 16 == 0, in % 2 == 0) -> packed."""
    n, k = w.shape
    return np.ascontiguousarray(
        w.reshape(n // LANES, LANES, k // 2, 2).transpose(0, 2, 1, 3).reshape(n // LANES,
                                                                              k // 2, -1))


def dense_bf16(m: int, n: int, k: int, rows: int = 4) -> tuple[tir.Schedule, list[te.Tensor]]:
    """The scheduled ``x @ w.T`` (float32 out, shape ``m x n // 16 x 16``) for bf16 ``x``
    (``m x k``) and the packed weight; ``n % 16 == 0``, ``k % 2 == 0``, ``m % rows == 0``."""
    a = te.placeholder((m, k), "uint16", "A")
    w = te.placeholder((n // LANES, k // 2, 2 * LANES), "uint16", "W")
    ko, ki = te.reduce_axis((0, k // 2), "ko"), te.reduce_axis((0, 2), "ki")
    c = te.compute((m, n // LANES, LANES), lambda i, no, j: te.sum(
        widen(a[i, ko * 2 + ki], "float32") * widen(w[no, ko, j * 2 + ki], "float32"),
        axis=[ko, ki]), name="dense_bf16")
    sch = tir.Schedule(te.create_prim_func([a, w, c]))
    i, no, j, kk, kj = sch.get_loops(sch.get_block("dense_bf16"))
    io, ii = sch.split(i, factors=[None, rows])
    sch.reorder(no, io, kk, ii, j, kj)
    tile = sch.tensorize(j, register_dp2a_bf16())
    sch.decompose_reduction(tile, kk)
    sch.unroll(ii)
    sch.parallel(no)
    return sch, [a, w, c]
