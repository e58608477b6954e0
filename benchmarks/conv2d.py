"""conv2d 1 x 64 x 56 x 56, 64 filters 3 x 3, padding 1, fp32: tuned mlc against numpy.

    python benchmarks/conv2d.py [--trials 64] [--rounds 7] [--seed 0] [--clock wall|cpu]

mlc: ``topi.nn.conv2d`` (a padding stage and the direct convolution), tuned with
``mlc.tune.tune_tir`` in the default space, which tiles the convolution the BLAS way (the
filters are the rows of the register tile, its vectors 8 output columns of one or more
output rows -- 56 columns hold one vector of 8 side by side, not two -- and the input
channels the blocked reduction; see ``mlc/tune/tiling.py``). numpy: pad, im2col through a
strided view copied to a (576, 3136) matrix, then one matmul with OpenBLAS. Both are timed
in alternating rounds after a pause (so neither inherits the other's busy threads); the
table shows the medians and their ratio.
"""

from __future__ import annotations

import os

# parallel loops' threads on CPUs of their own (mlc.runtime.parallel.on_own_cpus): without it
# the OS often ran both threads on one CPU here (read when a module is built)
os.environ.setdefault("MLC_PIN_THREADS", "1")

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mlc  # noqa: E402
from mlc import te, topi, tune  # noqa: E402

SHAPE = {"channels": 64, "size": 56, "filters": 64, "kernel": 3}


def conv2d_func(c: int = 64, hw: int = 56, f: int = 64, k: int = 3):
    data = te.placeholder((1, c, hw, hw), name="data")
    weight = te.placeholder((f, c, k, k), name="weight")
    out = topi.nn.conv2d(data, weight, strides=1, padding=k // 2)
    return te.create_prim_func([data, weight, out])


def numpy_conv2d(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """im2col + matmul: the usual way to run a convolution on a BLAS."""
    _, c, h, wd = x.shape
    f, _, k, _ = w.shape
    xp = np.pad(x[0], ((0, 0), (k // 2, k // 2), (k // 2, k // 2)))
    s = xp.strides
    view = np.lib.stride_tricks.as_strided(xp, (c, k, k, h, wd), (s[0], s[1], s[2], s[1], s[2]))
    cols = view.reshape(c * k * k, h * wd)  # copies: the im2col matrix
    return (w.reshape(f, c * k * k) @ cols).reshape(1, f, h, wd)


def interleaved(fns, rounds: int, settle_s: float = 0.2,
                clock=time.perf_counter) -> list[list[float]]:
    """Seconds per call of each of ``fns`` in every round (each round times each once)."""
    times: list[list[float]] = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(rounds):
        for fn, ts in zip(fns, times):
            time.sleep(settle_s)
            number = 10
            t0 = clock()
            for _ in range(number):
                fn()
            ts.append((clock() - t0) / number)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: one thread each, timed by this thread's CPU time "
                        "(see tune_gemm.single_thread_cpu_clock)")
    args = parser.parse_args()
    if args.clock == "cpu":
        from tune_gemm import single_thread_cpu_clock

        clock = single_thread_cpu_clock()
    else:
        clock = time.perf_counter
    c, hw, f, k = (SHAPE[x] for x in ("channels", "size", "filters", "kernel"))
    rng = np.random.default_rng(0)
    x = rng.random((1, c, hw, hw), dtype="float32")
    w = rng.random((f, c, k, k), dtype="float32") - 0.5
    want = numpy_conv2d(x, w)
    func = conv2d_func(c, hw, f, k)
    t0 = time.perf_counter()
    best = tune.tune_tir(func, max_trials=args.trials, seed=args.seed)
    wall = time.perf_counter() - t0
    mod = mlc.build(best.mod)
    out = np.zeros_like(want)
    mod(x, w, out)
    np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-3)
    t_mlc, t_np = interleaved([lambda: mod(x, w, out), lambda: numpy_conv2d(x, w)], args.rounds,
                              clock=clock)
    flop = 2.0 * f * c * k * k * hw * hw
    ratios = [n / m for m, n in zip(t_mlc, t_np)]
    print(f"conv2d 1x{c}x{hw}x{hw}, {f} filters {k}x{k}, pad {k // 2}: {args.trials} trials "
          f"in {wall:.0f} s" + ("; one thread each, CPU time" if args.clock == "cpu" else ""))
    print(f"  mlc (tuned)         {flop / statistics.median(t_mlc) / 1e9:7.1f} GFLOPS")
    print(f"  numpy im2col+matmul {flop / statistics.median(t_np) / 1e9:7.1f} GFLOPS")
    print(f"  mlc / numpy: median {statistics.median(ratios):.2f} over {args.rounds} rounds "
          f"({', '.join(f'{r:.2f}' for r in ratios)})")
    print("best schedule:")
    print(best.trace)


if __name__ == "__main__":
    main()
