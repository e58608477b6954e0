"""Tuned fp32 GEMM at 1024^3 in 64 trials, beside numpy (and TVM's MetaSchedule).

    python benchmarks/tune_gemm.py [--size 1024] [--trials 64] [--seeds 1] [--rounds 7]
                                   [--random] [--template] [--tvm | --no-tvm] [--plot F] [--json]
                                   [--clock wall|cpu]

``mlc.tune.tune_tir`` searches the default space (``mlc/tune/tiling.py``: BLAS-style
register tile sized from the vector registers, both operands packed into panels, kc/mc/nc
cache blocking, unrolled micro-kernel) with the xgboost model, ``--trials`` measurements per
seed. ``--random`` adds random search over the same space, ``--template`` an AutoTVM-style
template with a write cache. With ``--tvm`` (the default when ``apache-tvm`` is importable)
MetaSchedule tunes the same GEMM with the same number of trials (``benchmarks/tvm_side.py``).

The best kernel of every search is then timed against numpy's matmul (OpenBLAS) in
alternating rounds, a pause before each batch so no one inherits another's spinning threads;
the table shows median GFLOPS, the median of the per-round ratios to numpy, the fraction of
the machine's peak (``benchmarks/peak.py``) and the tuning wall time.
"""

from __future__ import annotations

import os

# parallel loops' threads on CPUs of their own (mlc.runtime.parallel.on_own_cpus): without it
# the OS often ran both threads on one CPU here (read when a module is built)
os.environ.setdefault("MLC_PIN_THREADS", "1")

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peak import measure_peak  # noqa: E402

import mlc  # noqa: E402
from mlc import te, tune  # noqa: E402


def matmul_func(n: int) -> Any:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


@tune.template("bench_gemm_cached")
def gemm_template(n: int):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    cfg = tune.get_config()
    y, x = C.op.axis
    cfg.define_split("tile_y", y, num_outputs=2, max_factor=32)
    cfg.define_split("tile_x", x, num_outputs=2, policy="power2", max_factor=64)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, yi, xi)
    s[CC].compute_at(s[C], xo)
    yc, xc = s[CC].op.axis
    (kc,) = s[CC].op.reduce_axis
    cfg.define_split("tile_k", kc, num_outputs=2, max_factor=16)
    ko, ki = cfg["tile_k"].apply(s, CC, kc)
    s[CC].reorder(ko, yc, ki, xc)
    cfg.define_knob("unroll_k", [0, 1])
    if cfg["unroll_k"].val:
        s[CC].unroll(ki)
    s[CC].vectorize(xc)
    s[C].vectorize(xi)
    s[C].parallel(yo)
    return s, [A, B, C]


def trials_to_reach(curve: list[float], target: float) -> int | None:
    for k, g in enumerate(curve):
        if g >= target:
            return k + 1
    return None


def interleaved_rounds(fns: list[Any], rounds: int, number: int, settle_s: float = 0.2,
                       clock: Any = time.perf_counter) -> list[list[float]]:
    """Seconds per call of each of ``fns`` in every round (each round times each once,
    after a pause of ``settle_s`` and one untimed call that wakes its own sleeping threads:
    a cold first call is the wake-up, not the kernel) on ``clock`` (``time.thread_time``
    with ``--clock cpu``)."""
    times: list[list[float]] = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(rounds):
        for fn, ts in zip(fns, times):
            time.sleep(settle_s)
            fn()
            t0 = clock()
            for _ in range(number):
                fn()
            ts.append((clock() - t0) / number)
    return times


def single_thread_cpu_clock() -> Any:
    """For ``--clock cpu``: one thread for mlc's parallel loops and for OpenBLAS, and the
    CPU time of this thread as the clock. On a machine other processes share, wall time
    counts their turns too (and OpenBLAS's spinning threads suffer most); the CPU time of
    one thread counts only this thread's, so the ratio says how good the kernels are."""
    import os

    from threadpoolctl import threadpool_limits

    os.environ["MLC_NUM_THREADS"] = "1"
    threadpool_limits(1)
    return time.thread_time


def run_search(label: str, make_tuner: Any, trials: int, seeds: int) -> dict[str, Any]:
    curves, walls, bests, configs = [], [], [], []
    option = tune.measure_option(number=3, repeat=2, timeout=30)
    for seed in range(seeds):
        t0 = time.perf_counter()
        tuner = make_tuner(seed)
        tuner.tune(trials, measure_option=option, confirm=4,
                   callbacks=[tune.callback.progress_bar(total=trials,
                                                         prefix=f"{label} seed {seed}")])
        walls.append(time.perf_counter() - t0)
        curves.append(tuner.best_so_far())
        bests.append(tuner.space.build(tuner.best_index) if tuner.best_index is not None else None)
        configs.append(tuner.best_config)
    # the median seed's best kernel is the one timed against numpy
    order = sorted(range(seeds), key=lambda k: curves[k][-1] if curves[k] else 0.0)
    median = order[len(order) // 2]
    return {"label": label, "curves": curves, "wall_s": walls, "best": bests[median],
            "config": configs[median]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--random", action="store_true", help="also random search")
    parser.add_argument("--template", action="store_true", help="also the AutoTVM template")
    parser.add_argument("--tvm", action=argparse.BooleanOptionalAction,
                        default=importlib.util.find_spec("tvm") is not None,
                        help="also MetaSchedule (default: when apache-tvm is importable)")
    parser.add_argument("--plot", default="")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: one thread each, timed by this thread's CPU time")
    args = parser.parse_args()
    clock = single_thread_cpu_clock() if args.clock == "cpu" else time.perf_counter
    n = args.size
    func = matmul_func(n)

    def space(seed: int) -> Any:
        return tune.SampledSpace(func, tune.default_space, seed=seed)

    searches = [run_search("tune_tir xgb",
                           lambda seed: tune.XGBTuner(space(seed), seed=seed, feature="knob"),
                           args.trials, args.seeds)]
    if args.random:
        searches.append(run_search("tune_tir random",
                                   lambda seed: tune.RandomTuner(space(seed), seed=seed),
                                   args.trials, args.seeds))
    if args.template:
        task = tune.create_task("bench_gemm_cached", args=(n,))
        searches.append(run_search("template xgb",
                                   lambda seed: tune.XGBTuner(task, seed=seed, feature="knob"),
                                   args.trials, args.seeds))
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype="float32")
    b = rng.random((n, n), dtype="float32")
    want = a @ b
    labels, fns, walls = [], [], []
    for s in searches:
        if s["best"] is None:
            continue
        f = mlc.build(s["best"])
        c = np.zeros((n, n), "float32")
        f(a, b, c)
        np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-2)
        labels.append(s["label"])
        fns.append(lambda f=f, c=c: f(a, b, c))
        walls.append(statistics.median(s["wall_s"]))
    if args.tvm:
        import tvm_side

        tg, wall = tvm_side.metaschedule_gemm(n, args.trials)
        tg.set_inputs(a, b)
        tg.kernel()
        np.testing.assert_allclose(tg.result(), want, rtol=1e-3, atol=1e-2)
        labels.append("TVM MetaSchedule")
        fns.append(tg.kernel)
        walls.append(wall)
    labels.append("numpy")
    fns.append(lambda: a @ b)
    walls.append(0.0)
    flop = 2.0 * n**3
    number = max(1, int(0.1 / (flop / 100e9)))
    times = interleaved_rounds(fns, args.rounds, number, clock=clock)
    peak = measure_peak()
    rows = []
    for label, ts, wall in zip(labels, times, walls):
        ratios = [tn / tm for tm, tn in zip(ts, times[-1])]
        gflops = flop / statistics.median(ts) / 1e9
        rows.append({"search": label, "gflops": gflops,
                     "ratio_to_numpy": statistics.median(ratios), "ratios": ratios,
                     "fraction_of_peak": gflops / peak, "wall_s": wall})
    if args.json:
        print(json.dumps({"size": n, "trials": args.trials, "peak_gflops": peak, "rows": rows,
                          "curves": {s["label"]: s["curves"] for s in searches}}, indent=2))
        return
    print(f"\nGEMM {n}^3 fp32, {args.trials} trials x {args.seeds} seed(s); "
          f"machine peak {peak:.0f} GFLOPS; {args.rounds} alternating rounds"
          + ("; one thread each, CPU time" if args.clock == "cpu" else ""))
    print(f"{'search':<18}{'GFLOPS':>8}{'x numpy':>9}{'of peak':>9}{'tuning':>8}"
          "  per-round x numpy")
    for r in rows:
        tuning = f"{r['wall_s']:6.0f}s" if r["wall_s"] else "      -"
        print(f"{r['search']:<18}{r['gflops']:>8.1f}{r['ratio_to_numpy']:>9.2f}"
              f"{r['fraction_of_peak']:>9.0%}{tuning:>8}  "
              + " ".join(f"{x:.2f}" for x in r["ratios"]))
    for s in searches:
        print(f"{s['label']}: best config {s['config']}")
    for s in searches:
        step = max(1, args.trials // 16)
        curve = s["curves"][0][::step]
        print(f"{s['label']:<18}" + " ".join(f"{g:6.1f}" for g in curve))
    if args.random and len(searches) > 1:
        reach = [trials_to_reach(c, r[-1]) for c, r in zip(searches[0]["curves"],
                                                             searches[1]["curves"])]
        print(f"trials xgb needed to reach random search's best: {reach}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        for s, color in zip(searches, ["C0", "C1", "C2"]):
            for k, c in enumerate(s["curves"]):
                ax.plot(range(1, len(c) + 1), c, color=color, alpha=0.8,
                        label=s["label"] if k == 0 else None)
        ax.axhline(rows[-1]["gflops"], color="k", linestyle="--", label="numpy")
        ax.set_xlabel("trials")
        ax.set_ylabel("best GFLOPS so far (as measured while tuning)")
        ax.set_title(f"GEMM {n}^3 fp32")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"plot saved to {args.plot}")


if __name__ == "__main__":
    main()
