"""How much faster ``parallel`` loops run on all cores than on one.

    python benchmarks/parallel_scaling.py [--rounds 7]

Two kernels are built twice, with ``MLC_NUM_THREADS=1`` and with all cores, and timed in
alternating rounds: the compute-bound FMA kernel of ``peak.py`` (the target is a speedup of
at least 1.8x on 2 cores) and the final GEMM schedule of ``gemm.py`` at 1024^3.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gemm  # noqa: E402
import peak  # noqa: E402

import mlc  # noqa: E402
from mlc import config  # noqa: E402


def build_with_threads(func, threads: int | None):
    old = os.environ.get("MLC_NUM_THREADS")
    if threads is None:
        os.environ.pop("MLC_NUM_THREADS", None)
    else:
        os.environ["MLC_NUM_THREADS"] = str(threads)
    try:
        return mlc.build(func)
    finally:
        if old is None:
            os.environ.pop("MLC_NUM_THREADS", None)
        else:
            os.environ["MLC_NUM_THREADS"] = old


def alternate(f1, f2, args, rounds: int, number: int) -> tuple[float, float]:
    t1, t2 = [], []
    f1(*args), f2(*args)
    for _ in range(rounds):
        for f, out in ((f1, t1), (f2, t2)):
            t0 = time.perf_counter()
            for _ in range(number):
                f(*args)
            out.append((time.perf_counter() - t0) / number)
    return statistics.median(t1), statistics.median(t2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    cores = config.num_threads()
    print(f"parallel scaling, 1 thread vs {cores} (median of {args.rounds} alternating rounds)")
    # many tasks per call, so waking the thread pool is a small part of a call
    shape = {**peak.PEAK_SHAPE, "tasks": 64}
    func = peak.peak_func(**shape)
    x = np.random.rand(shape["rows"], shape["k_len"]).astype("float32")
    y = (np.random.rand(shape["k_len"], shape["lanes"]).astype("float32") - 0.5) * 1e-3
    out = np.zeros((shape["tasks"], shape["rows"], shape["lanes"]), "float32")
    one, many = build_with_threads(func, 1), build_with_threads(func, None)
    t1, tn = alternate(one, many, (x, y, out), args.rounds, 5)
    flop = 2.0 * out.size * shape["k_len"] * shape["repeat"]
    print(f"FMA kernel   1 thread {flop / t1 / 1e9:7.1f} GFLOPS   {cores} threads "
          f"{flop / tn / 1e9:7.1f} GFLOPS   speedup {t1 / tn:.2f}x")
    n = 1024
    g = gemm.parallel(n)
    a = np.random.rand(n, n).astype("float32")
    b = np.random.rand(n, n).astype("float32")
    c = np.zeros((n, n), "float32")
    one, many = build_with_threads(g, 1), build_with_threads(g, None)
    t1, tn = alternate(one, many, (a, b, c), args.rounds, 2)
    flop = 2.0 * n**3
    print(f"GEMM 1024^3  1 thread {flop / t1 / 1e9:7.1f} GFLOPS   {cores} threads "
          f"{flop / tn / 1e9:7.1f} GFLOPS   speedup {t1 / tn:.2f}x")


if __name__ == "__main__":
    main()
