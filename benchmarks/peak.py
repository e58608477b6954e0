"""The machine's fp32 peak, measured with a kernel built by mlc itself.

Eight independent accumulators of 16 lanes each are updated with ``acc += x * y[k]`` (one
fused multiply-add per lane), the outer loop on every core; the result follows the machine:
AVX-512 FMAs where the CPU has them, AVX2 or NEON otherwise. The kernel lives in
``mlc.viz.perf`` (notebook 04 draws the roofline with it).

    python benchmarks/peak.py
"""

from __future__ import annotations

from mlc.viz.perf import PEAK_SHAPE, measure_peak, peak_func

__all__ = ["PEAK_SHAPE", "measure_peak", "peak_func"]

if __name__ == "__main__":
    print(f"peak: {measure_peak(1.0):.0f} GFLOPS fp32")
