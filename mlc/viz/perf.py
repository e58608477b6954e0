"""Performance pictures: GFLOPS per schedule step beside numpy, a roofline, tuning curves.

    gflops = {"naive": 1.2, "tiled": 14.0, "vectorized": 60.0}
    viz.gflops_bars(gflops, reference={"numpy": 120.0})
    viz.roofline({"tiled": (gflops_tiled, intensity)}, peak_gflops=viz.measure_peak(),
                 bandwidth_gbs=viz.measure_bandwidth())
    viz.tuning_curve({"random": rnd.best_so_far(), "xgb": xgb.best_so_far()})
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mlc.errors import MLCTypeError
from mlc.tune.measure import whole_number
from mlc.viz.iteration import _figure


def _count(what: str, value: object) -> int:
    """A whole number of at least 1, else an MLCTypeError naming it."""
    return whole_number(what, value, error=MLCTypeError)


def _positive(what: str, value: object) -> float:
    """A finite number above zero, else an MLCTypeError naming it (a picture on a log scale,
    a rate or a ratio cannot use anything else)."""
    if (isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating))
            or not math.isfinite(value) or value <= 0):
        raise MLCTypeError(f"{what} is {value!r}: it must be a finite number above zero")
    return float(value)


def seconds_per_call(fn: Callable[[], Any], number: int = 3, repeat: int = 3) -> float:
    """The best of ``repeat`` rounds of ``number`` calls (after one warm-up call)."""
    number, repeat = _count("number", number), _count("repeat", repeat)
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def measure_gflops(module: Any, arrays: Sequence[np.ndarray], flop: float, number: int = 3,
                   repeat: int = 3) -> float:
    """GFLOPS of a built module called on ``arrays`` (``flop`` operations per call)."""
    flop = _positive("flop", flop)
    t = module.time_evaluator(number=number, repeat=repeat)(*arrays)
    return flop / float(min(t.results)) / 1e9


def copy_func(n: int) -> Any:
    """``dst[i] = src[i]`` over ``n`` floats, split in one contiguous chunk per thread
    (parallel outer loop, vectorized inner loop): what the memory bandwidth is measured with."""
    from mlc import config, te, tir
    from mlc.target.llvm.cpu import host_simd

    src = te.placeholder((n,), name="src")
    dst = te.compute((n,), lambda i: src[i], name="dst")
    sch = tir.Schedule(te.create_prim_func([src, dst]))
    (i,) = sch.get_loops(sch.get_block("dst"))
    chunks = 8 * config.num_threads()
    outer, rest = sch.split(i, factors=[chunks, None])
    _, vec = sch.split(rest, factors=[None, 4 * host_simd().lanes])
    sch.parallel(outer)
    sch.vectorize(vec)
    return sch.mod


def measure_bandwidth(nbytes: int = 64 << 20, repeat: int = 5, module: Any = None) -> float:
    """Memory bandwidth in GB/s with every thread copying (read + write counted), from an
    mlc-built parallel copy of ``nbytes`` (:func:`copy_func`), far larger than the caches.
    A one-thread ``np.copyto`` would set one core's bandwidth against an all-core peak."""
    import mlc

    least = 4 * 8 * 64 * 64  # one chunk of 4096 floats for each of 8 tasks per thread
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes < least:
        raise MLCTypeError(
            f"measure_bandwidth(nbytes={nbytes!r}): copy at least {least} bytes, and far more "
            "than the last-level cache holds to measure memory (the default is 64 MiB)")
    repeat = _count("repeat", repeat)
    n = nbytes // 4
    n -= n % (8 * 64 * 64)
    f = module if module is not None else mlc.build(copy_func(n))
    src = np.ones(n, dtype=np.float32)
    dst = np.empty_like(src)
    t = seconds_per_call(lambda: f(src, dst), number=1, repeat=repeat)
    return 2 * 4 * n / t / 1e9


def peak_shape() -> dict[str, int]:
    """The register tile of :func:`peak_func` on this CPU: ``cols`` vectors of ``lanes``
    lanes by as many ``rows`` as the vector registers hold, keeping two registers for the
    loaded row vectors and one for the broadcast (AVX2: 6 x 2 ymm = 12 accumulators of 16;
    AVX-512: 14 x 2 zmm = 28 of 32). Every accumulator is an independent FMA chain, far more
    than the FMA latency (about 4 cycles) times the FMA ports (2) needs."""
    from mlc import config
    from mlc.target.llvm.cpu import host_simd

    simd = host_simd()
    cols = 2
    rows = max(1, (simd.registers - cols - 2) // cols)
    return {"tasks": 4 * config.num_threads(), "rows": rows, "lanes": cols * simd.lanes,
            "k_len": 128, "repeat": 2048}


PEAK_SHAPE = peak_shape()


def peak_func(tasks: int, rows: int, lanes: int, k_len: int, repeat: int) -> Any:
    """The FMA kernel that measures the peak: the micro-kernel of a GEMM on data that sits in
    L1. Each of ``tasks`` (spread over the threads) keeps ``rows x lanes`` accumulators in
    registers and adds ``X[r, k] * Y[k, v]`` (a broadcast times a vector: one FMA per
    vector) ``repeat * k_len`` times. Returns the scheduled PrimFunc (inputs X, Y; output
    out)."""
    from mlc import te, tir

    X = te.placeholder((rows, k_len), name="X")
    Y = te.placeholder((k_len, lanes), name="Y")
    q = te.reduce_axis((0, repeat), name="q")
    k = te.reduce_axis((0, k_len), name="k")
    out = te.compute((tasks, rows, lanes),
                     lambda t, r, v: te.sum(X[r, k] * Y[k, v], axis=[q, k]), name="out")
    sch = tir.Schedule(te.create_prim_func([X, Y, out]))
    blk = sch.get_block("out")
    t, r, v, qq, kk = sch.get_loops(blk)
    sch.reorder(t, qq, kk, r, v)
    cache = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(cache, t)
    sch.decompose_reduction(blk, qq)
    sch.unroll(r)
    sch.vectorize(v)
    sch.parallel(t)
    sch.vectorize(sch.get_loops(cache)[-1])
    return sch.mod


def measure_peak(seconds: float = 0.2, module: Any = None) -> float:
    """Peak fp32 GFLOPS on all threads, from independent fused multiply-adds in a kernel
    built with mlc itself (:func:`peak_func` with :func:`peak_shape`: as many accumulators
    as the vector registers hold). The best of repeated calls over ``seconds``: other work
    on the machine can only slow a call down. ``module`` may be a build of ``peak_func``
    made elsewhere (e.g. with a different ``MLC_NUM_THREADS``)."""
    import mlc

    if isinstance(seconds, bool) or not isinstance(seconds, (int, float, np.integer, np.floating)
                                                   ) or not 0 <= seconds < math.inf:
        raise MLCTypeError(f"measure_peak(seconds={seconds!r}): give a time of 0 or more")
    shape = peak_shape()
    tasks, rows, lanes, k_len = (shape[k] for k in ("tasks", "rows", "lanes", "k_len"))
    f = module if module is not None else mlc.build(peak_func(**shape))
    x = np.random.rand(rows, k_len).astype("float32")
    y = (np.random.rand(k_len, lanes).astype("float32") - 0.5) * 1e-3
    o = np.zeros((tasks, rows, lanes), "float32")
    flop = 2.0 * tasks * rows * lanes * k_len * shape["repeat"]
    best, deadline = 0.0, time.perf_counter() + seconds
    f(x, y, o)
    while time.perf_counter() < deadline or best == 0.0:
        t0 = time.perf_counter()
        f(x, y, o)
        best = max(best, flop / (time.perf_counter() - t0) / 1e9)
    return best


def gflops_bars(results: Mapping[str, float], reference: Mapping[str, float] | None = None,
                peak: float | None = None, title: str = "GFLOPS per schedule step",
                ax: Any = None) -> Any:
    """A bar per schedule step (in order), reference bars (numpy) in grey, the ratio to the
    first reference over each bar, and the machine's peak as a dashed line."""
    names = list(results) + list(reference or {})
    values = list(results.values()) + list((reference or {}).values())
    for name, v in zip(names, values):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or (
            not math.isfinite(v) or v < 0
        ):
            raise MLCTypeError(f"gflops_bars: {name!r} is {v!r}; give GFLOPS as numbers >= 0")
    for name, v in (reference or {}).items():
        _positive(f"the reference {name!r}", v)  # every bar is divided by the first
    colors = ["#1976d2"] * len(results) + ["#9e9e9e"] * len(reference or {})
    fig, ax = _figure(ax, (max(5.0, 0.9 * len(names) + 2), 3.6))
    bars = ax.bar(range(len(names)), values, color=colors)
    ref = next(iter((reference or {}).values()), None)
    for bar, v in zip(bars, values):
        text = f"{v:.1f}" if ref is None else f"{v:.1f}\n({v / ref:.2f}x)"
        ax.annotate(text, (bar.get_x() + bar.get_width() / 2, v), ha="center", va="bottom",
                    fontsize=7)
    if peak:
        ax.axhline(peak, color="red", linestyle="--", linewidth=1)
        ax.annotate(f"peak {peak:.0f}", (len(names) - 0.5, peak), color="red", fontsize=8,
                    ha="right", va="bottom")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("GFLOPS")
    ax.set_title(title)
    ax.set_ylim(0, max([*values, peak or 0]) * 1.25 or 1)
    fig.tight_layout()
    return fig


def roofline(points: Mapping[str, tuple[float, float]], peak_gflops: float,
             bandwidth_gbs: float, title: str = "roofline", ax: Any = None) -> Any:
    """The roofline: attainable GFLOPS = min(peak, intensity x bandwidth), log-log; each
    point is ``name: (gflops, arithmetic intensity in flop/byte)``. A point under the
    slanted roof is memory bound; under the flat roof, compute bound."""
    peak_gflops = _positive("peak_gflops", peak_gflops)
    bandwidth_gbs = _positive("bandwidth_gbs", bandwidth_gbs)
    for name, point in points.items():
        if not (isinstance(point, (tuple, list)) and len(point) == 2):
            raise MLCTypeError(f"roofline: point {name!r} must be (gflops, intensity)")
        _positive(f"the GFLOPS of {name!r}", point[0])  # a log-log picture
        _positive(f"the arithmetic intensity of {name!r}", point[1])
    fig, ax = _figure(ax, (5.0, 3.8))
    intensities = [i for _, i in points.values()] or [1.0]
    lo = min(min(intensities) / 4, 0.05)
    hi = max(max(intensities) * 4, 4 * peak_gflops / bandwidth_gbs)
    xs = np.logspace(np.log10(lo), np.log10(hi), 200)
    ax.loglog(xs, np.minimum(peak_gflops, xs * bandwidth_gbs), color="black", linewidth=1.5)
    ridge = peak_gflops / bandwidth_gbs
    ax.axvline(ridge, color="grey", linestyle=":", linewidth=1)
    ax.annotate(f"ridge {ridge:.1f} flop/B", (ridge, peak_gflops / 20), fontsize=7,
                color="grey", rotation=90, ha="right")
    for name, (g, i) in points.items():
        ax.loglog([i], [g], "o", markersize=6)
        ax.annotate(name, (i, g), textcoords="offset points", xytext=(5, -3), fontsize=8)
    ax.set_xlabel("arithmetic intensity (flop / byte)")
    ax.set_ylabel("GFLOPS")
    ax.set_title(f"{title}: peak {peak_gflops:.0f} GFLOPS, {bandwidth_gbs:.0f} GB/s")
    fig.tight_layout()
    return fig


def tuning_curve(curves: Mapping[str, Sequence[float] | Any], reference: float | None = None,
                 title: str = "best GFLOPS so far", ax: Any = None) -> Any:
    """Best-so-far GFLOPS against trials, one line per tuner. Values are lists (as from
    ``tuner.best_so_far()``) or tuners themselves."""
    fig, ax = _figure(ax, (5.0, 3.4))
    for name, curve in curves.items():
        ys = curve.best_so_far() if hasattr(curve, "best_so_far") else list(curve)
        ax.step(range(1, len(ys) + 1), ys, where="post", label=name)
    if reference:
        ax.axhline(reference, color="grey", linestyle="--", linewidth=1, label="numpy")
    ax.set_xlabel("trials")
    ax.set_ylabel("GFLOPS")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def arithmetic_intensity(func: Any, cache_bytes: int | None = None) -> float:
    """Flop per byte of memory traffic of a scheduled PrimFunc (or Schedule), computed from
    its loop nest: :func:`mlc.tune.features.flop_count` over
    :func:`mlc.tune.features.memory_traffic` for a cache of ``cache_bytes`` (default: this
    machine's last-level cache, so the bytes are those DRAM moves, the bandwidth
    :func:`measure_bandwidth` measures)."""
    from mlc.target.llvm.cpu import cache_bytes as cache_size
    from mlc.tir.stmt import PrimFunc
    from mlc.tune.features import flop_count, memory_traffic

    func = getattr(func, "mod", func)
    if not isinstance(func, PrimFunc):
        raise MLCTypeError(
            f"arithmetic_intensity takes a PrimFunc or a tir.Schedule, got {type(func).__name__}")
    if cache_bytes is not None:
        cache_bytes = _count("cache_bytes", cache_bytes)
    size = cache_bytes if cache_bytes is not None else cache_size(3)
    return flop_count(func) / max(memory_traffic(func, size), 1.0)


def matmul_intensity(n: int, m: int | None = None, k: int | None = None, itemsize: int = 4,
                     ) -> float:
    """Flop per byte of an ``n x k @ k x m`` matmul if each matrix moved through memory once
    (the best case a perfect cache allows)."""
    n = _count("n", n)
    m = n if m is None else _count("m", m)
    k = n if k is None else _count("k", k)
    itemsize = _count("itemsize", itemsize)
    return 2.0 * n * m * k / (itemsize * (n * k + k * m + n * m))
