"""Model-guided tuning against random search on fp32 GEMM (and a conv2d), beside numpy.

    python benchmarks/tune_gemm.py [--size 1024] [--trials 64] [--seeds 3] [--plot tune_gemm.png]
                                   [--conv] [--json]

Three searches, each with ``--seeds`` seeds and the same budget:

* ``tune_tir`` with the default space (multi-level tiling, write cache, parallel, vectorize),
  guided by the xgboost model (``XGBTuner``) and, as the baseline, by ``RandomTuner``;
* an AutoTVM-style template with a write cache (``@mlc.tune.template``), XGBTuner.

It prints best-so-far GFLOPS against trials, the best as a ratio to numpy's matmul measured
in the same run and as a fraction of the machine's peak, how many trials the model needed to
reach random search's final best (median over seeds), and the wall time; ``--plot`` saves
the tuning curves as a PNG.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peak import measure_peak  # noqa: E402

from mlc import te, tune  # noqa: E402


def matmul_func(n: int) -> te.Tensor:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def conv2d_func(n: int = 1, c: int = 64, hw: int = 56, f: int = 64) -> te.Tensor:
    data = te.placeholder((n, c, hw + 2, hw + 2), name="data")
    weight = te.placeholder((f, c, 3, 3), name="weight")
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    out = te.compute(
        (n, f, hw, hw),
        lambda b, o, y, x: te.sum(
            data[b, rc, y + ry, x + rx] * weight[o, rc, ry, rx], axis=[rc, ry, rx]
        ),
        name="conv",
    )
    return te.create_prim_func([data, weight, out])


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


def numpy_gflops(n: int, seconds: float = 1.0) -> float:
    a = np.random.rand(n, n).astype("float32")
    b = np.random.rand(n, n).astype("float32")
    a @ b
    runs, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a @ b
        runs += 1
    return 2.0 * n**3 * runs / (time.perf_counter() - t0) / 1e9


def trials_to_reach(curve: list[float], target: float) -> int | None:
    for k, g in enumerate(curve):
        if g >= target:
            return k + 1
    return None


def interleaved_ratio(func, n: int, rounds: int = 5) -> tuple[float, float]:
    """(mlc GFLOPS, numpy GFLOPS) of ``func`` and numpy's matmul timed in alternating rounds."""
    import mlc

    f = mlc.build(func)
    a = np.random.rand(n, n).astype("float32")
    b = np.random.rand(n, n).astype("float32")
    c = np.zeros((n, n), "float32")
    f(a, b, c)
    a @ b
    number = max(1, int(0.1 / (2.0 * n**3 / 100e9)))
    tm, tn = [], []
    for _ in range(rounds):
        # OpenBLAS's threads spin for a while after a call: let them settle before timing
        time.sleep(0.2)
        t0 = time.perf_counter()
        for _ in range(number):
            f(a, b, c)
        tm.append((time.perf_counter() - t0) / number)
        time.sleep(0.2)
        t0 = time.perf_counter()
        for _ in range(number):
            a @ b
        tn.append((time.perf_counter() - t0) / number)
    flop = 2.0 * n**3
    return flop / statistics.median(tm) / 1e9, flop / statistics.median(tn) / 1e9


def run_search(label: str, make_tuner, trials: int, seeds: int) -> dict[str, object]:
    curves, walls, bests = [], [], []
    option = tune.measure_option(number=3, repeat=2, timeout=30)
    for seed in range(seeds):
        t0 = time.perf_counter()
        tuner = make_tuner(seed)
        tuner.tune(trials, measure_option=option, callbacks=[tune.callback.progress_bar(
            total=trials, prefix=f"{label} seed {seed}")])
        walls.append(time.perf_counter() - t0)
        curves.append(tuner.best_so_far())
        bests.append(tuner.space.build(tuner.best_index) if tuner.best_index is not None else None)
    return {"label": label, "curves": curves, "wall_s": walls, "bests": bests}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--plot", default="")
    parser.add_argument("--conv", action="store_true", help="also tune a 3x3 conv2d")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    n = args.size
    func = matmul_func(n)
    xgb = lambda seed: tune.XGBTuner(tune.SampledSpace(func, tune.default_space, seed=seed),  # noqa: E731
                                     seed=seed, feature="knob")
    rnd = lambda seed: tune.RandomTuner(tune.SampledSpace(func, tune.default_space, seed=seed),  # noqa: E731
                                        seed=seed)
    task = tune.create_task("bench_gemm_cached", args=(n,))
    tmpl = lambda seed: tune.XGBTuner(task, seed=seed, feature="knob")  # noqa: E731
    searches = [run_search("tune_tir xgb", xgb, args.trials, args.seeds),
                run_search("tune_tir random", rnd, args.trials, args.seeds),
                run_search("template xgb", tmpl, args.trials, args.seeds)]
    if args.conv:
        conv = conv2d_func()
        searches.append(run_search(
            "conv2d xgb",
            lambda seed: tune.XGBTuner(tune.SampledSpace(conv, tune.default_space, seed=seed),
                                       seed=seed, feature="knob"),
            args.trials, args.seeds))
    peak = measure_peak()
    random_best = [c[-1] for c in searches[1]["curves"]]  # type: ignore[index]
    reach = [trials_to_reach(c, rb) for c, rb in zip(searches[0]["curves"], random_best)]  # type: ignore[arg-type]
    summary = []
    np_seen = []
    for s in searches:
        finals = [c[-1] for c in s["curves"]]  # type: ignore[union-attr]
        # the median seed's best kernel, re-timed against numpy in alternating rounds
        order = sorted(range(len(finals)), key=lambda k: finals[k])
        best_func = s["bests"][order[len(order) // 2]]  # type: ignore[index]
        if best_func is None or "conv" in str(s["label"]):
            continue
        mlc_gf, np_gf = interleaved_ratio(best_func, n)
        np_seen.append(np_gf)
        summary.append({
            "search": s["label"], "best_gflops_median": mlc_gf,
            "ratio_to_numpy": mlc_gf / np_gf,
            "fraction_of_peak": mlc_gf / peak,
            "wall_s_median": statistics.median(s["wall_s"]),  # type: ignore[arg-type]
        })
    np_gf = statistics.median(np_seen) if np_seen else numpy_gflops(n)
    if args.json:
        print(json.dumps({"size": n, "numpy_gflops": np_gf, "peak_gflops": peak,
                          "summary": summary, "xgb_trials_to_random_best": reach,
                          "curves": {s["label"]: s["curves"] for s in searches}}, indent=2))
        return
    else:
        print(f"\nGEMM {n}^3 fp32, {args.trials} trials x {args.seeds} seeds; numpy {np_gf:.0f} "
              f"GFLOPS, machine peak {peak:.0f} GFLOPS")
        print(f"{'search':<18}{'best GFLOPS':>12}{'x numpy':>9}{'of peak':>9}{'wall':>8}")
        for r in summary:
            print(f"{r['search']:<18}{r['best_gflops_median']:>12.1f}{r['ratio_to_numpy']:>9.2f}"
                  f"{r['fraction_of_peak']:>9.0%}{r['wall_s_median']:>7.0f}s")
        valid = [r for r in reach if r is not None]
        shown = statistics.median(valid) if len(valid) == len(reach) else "never (some seeds)"
        print(f"trials the model needed to reach random search's {args.trials}-trial best: "
              f"{reach} (median {shown})")
        for s in searches:
            step = max(1, args.trials // 16)
            curve = s["curves"][0][::step]  # type: ignore[index]
            print(f"{s['label']:<18}" + " ".join(f"{g:6.1f}" for g in curve))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        for s, color in zip(searches, ["C0", "C1", "C2", "C3"]):
            for k, c in enumerate(s["curves"]):  # type: ignore[union-attr]
                ax.plot(range(1, len(c) + 1), c, color=color, alpha=0.8,
                        label=s["label"] if k == 0 else None)
        ax.axhline(np_gf, color="k", linestyle="--", label="numpy")
        ax.set_xlabel("trials")
        ax.set_ylabel("best GFLOPS so far")
        ax.set_title(f"GEMM {n}^3 fp32")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"plot saved to {args.plot}")


if __name__ == "__main__":
    main()
