"""tune_tir on the GEMM shapes a transformer makes, beside numpy (issue 30).

    python benchmarks/gemm_shapes.py [--trials 64] [--rounds 7] [--threads 2]
                                     [--shapes 1x768x768,16x768x3072,...]

For each (M, K, N) = (1, 768, 768), (16, 768, 3072), (128, 768, 768), (128, 3072, 768):
``C = A @ B`` (A (M, K), B (K, N)) tuned with ``mlc.tune.tune_tir`` (the default space, the
xgboost model, ``--trials`` measurements), the best kernel checked against numpy and then
timed against numpy's matmul (OpenBLAS) in interleaved rounds, a pause and one untimed call
before each timed batch (benchmarks/vs_ort.py's harness). Both sides get ``--threads``
threads (mlc's MLC_NUM_THREADS, OpenBLAS through threadpoolctl); ``--clock cpu`` one thread
each, timed by the thread's CPU time (for a machine other processes share). The table prints the
GFLOPS, the median of per-round ratios, the tuning wall time and the load average.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vs_ort  # noqa: E402

_threads = vs_ort.setup_from_argv(sys.argv)  # before mlc loads its OpenMP runtime
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(_threads))
try:  # numpy is imported above: OpenBLAS read its thread count already; set it now
    from threadpoolctl import threadpool_limits

    threadpool_limits(_threads)
except ImportError:  # pragma: no cover - threadpoolctl comes with the dev extra
    pass

import mlc  # noqa: E402
from mlc import te, tune  # noqa: E402

SHAPES = ((1, 768, 768), (16, 768, 3072), (128, 768, 768), (128, 3072, 768))


def gemm(m: int, k: int, n: int) -> Any:
    a = te.placeholder((m, k), name="A")
    b = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    return te.create_prim_func([a, b, c])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: one thread each, timed by this thread's CPU time")
    ap.add_argument("--shapes", default="")
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")] \
        if args.shapes else SHAPES
    print(f"machine: {vs_ort.machine()}\nthreads: {_threads} each; tune_tir "
          f"{args.trials} trials per shape; {args.rounds} interleaved rounds; ratio = numpy "
          f"time / mlc time (above 1: mlc faster)\n")
    print("| (M, K, N) | mlc GFLOPS (min-max) | numpy GFLOPS (min-max) | numpy/mlc [min-max] | "
          "tuning s | load avg before -> after |\n|---|---|---|---|---|---|")
    for shape in shapes:
        print(bench_shape(shape, args.trials, args.rounds), flush=True)


def bench_shape(shape: tuple[int, ...], trials: int, rounds: int) -> str:
    """Tune one shape, check it, time it against numpy: one table row."""
    m, k, n = shape
    rng = np.random.default_rng(0)
    before = vs_ort.load()
    t0 = time.perf_counter()
    sch = tune.tune_tir(gemm(m, k, n), max_trials=trials, progress=False)
    tune_s = time.perf_counter() - t0
    f = mlc.build(sch.mod, target="llvm")
    a = rng.standard_normal((m, k)).astype("float32")
    b = rng.standard_normal((k, n)).astype("float32")
    c = np.zeros((m, n), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    out = np.empty((m, n), "float32")
    flops = 2.0 * m * k * n
    number = max(3, int(2e8 / flops))
    t_mlc, t_np = vs_ort.interleaved([lambda: f(a, b, c), lambda: np.matmul(a, b, out=out)],
                                     rounds, number)
    g_mlc = [flops / t / 1e9 for t in t_mlc]
    g_np = [flops / t / 1e9 for t in t_np]
    ratios = np.array(t_np) / np.array(t_mlc)
    return (f"| ({m}, {k}, {n}) | {np.median(g_mlc):.1f} ({min(g_mlc):.1f}-{max(g_mlc):.1f})"
            f" | {np.median(g_np):.1f} ({min(g_np):.1f}-{max(g_np):.1f}) | "
            f"**{np.median(ratios):.2f}x** [{ratios.min():.2f}-{ratios.max():.2f}] | "
            f"{tune_s:.0f} | {before} -> {vs_ort.load()} |")

if __name__ == "__main__":
    main()
