"""The machine's fp32 peak, measured with a kernel built by mlc itself.

Eight independent accumulators of 16 lanes each are updated with ``acc += x * y[k]`` (one
fused multiply-add per lane) ``K`` times; the outer loop runs on every core. The result
follows the machine: AVX-512 FMAs where the CPU has them, AVX2 or NEON otherwise.

    python benchmarks/peak.py
"""

from __future__ import annotations

import time

import numpy as np

import mlc
from mlc import te, tir

ACC, LANES, K, T = 8, 16, 2048, 256


def peak_func() -> tir.PrimFunc:
    X = te.placeholder((T, ACC, LANES), name="X")
    Y = te.placeholder((K,), name="Y")
    k = te.reduce_axis((0, K), name="k")
    out = te.compute((T, ACC, LANES), lambda t, c, lane: te.sum(X[t, c, lane] * Y[k], axis=k),
                     name="out")
    sch = tir.Schedule(te.create_prim_func([X, Y, out]))
    blk = sch.get_block("out")
    t, c, lane, kk = sch.get_loops(blk)
    sch.reorder(t, kk, c, lane)
    cache = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(cache, t)
    sch.decompose_reduction(blk, kk)
    sch.unroll(c)
    sch.vectorize(lane)
    sch.parallel(t)
    return sch.mod


def measure_peak(seconds: float = 0.3) -> float:
    """Peak GFLOPS (fp32 FMA) on all cores."""
    f = mlc.build(peak_func())
    x = np.random.rand(T, ACC, LANES).astype("float32")
    y = (np.random.rand(K).astype("float32") - 0.5) * 1e-3
    out = np.zeros((T, ACC, LANES), "float32")
    f(x, y, out)
    flop = 2.0 * T * ACC * LANES * K
    best = 0.0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or best == 0.0:
        t0 = time.perf_counter()
        for _ in range(5):
            f(x, y, out)
        best = max(best, 5 * flop / (time.perf_counter() - t0) / 1e9)
    return best


if __name__ == "__main__":
    print(f"peak: {measure_peak(1.0):.0f} GFLOPS fp32")
