"""mlc against ONNX Runtime on one ONNX model, timed fairly (issue 30), for mlp.py, convnet.py
and transformer.py.

Fair timing: both sides use the same number of threads (``--threads``, default 2: mlc's
``MLC_NUM_THREADS``, set before mlc is imported, and ORT's intra-op pool); no other framework
is imported in this process (torch's thread pool beside them changes both); rounds alternate
between the two, each timed batch after a pause and one untimed call (which wakes that side's
sleeping threads); the table prints the medians, the spread (min-max over rounds), the median
of the per-round ratios, and the load average before and after, since this machine may be
shared. Outputs are checked against ORT's before timing.

``--clock cpu`` (every script that uses this harness): one thread each, timed by this
thread's CPU time (``time.thread_time``): on a machine other processes share, wall time counts
their turns too; the CPU time of the one thread counts only this thread's, so the ratio says
how good the code is (caches are still shared).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from typing import Any

import numpy as np

CLOCK = time.perf_counter


def set_threads(n: int) -> None:
    """Call before importing mlc (its OpenMP runtime reads the count once)."""
    os.environ["MLC_NUM_THREADS"] = str(n)
    os.environ.setdefault("OMP_NUM_THREADS", str(n))


def setup_from_argv(argv: list[str]) -> int:
    """``--threads N`` (default 2) and ``--clock cpu`` (one thread, CPU time), read before
    mlc is imported; returns the thread count."""
    global CLOCK
    threads = int(argv[argv.index("--threads") + 1]) if "--threads" in argv else 2
    if "--clock" in argv and argv[argv.index("--clock") + 1] == "cpu":
        threads, CLOCK = 1, time.thread_time
    set_threads(threads)
    return threads


def machine() -> str:
    """lscpu's model name and the vector extensions it lists (never assumed)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown CPU (no lscpu)"
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    name = fields.get("Model name", "?").strip()
    flags = fields.get("Flags", "").split()
    ext = [f for f in ("avx2", "avx512f", "avx512_vnni", "amx_tile") if f in flags]
    return f"{name}; {os.cpu_count()} logical CPUs; {', '.join(ext) or 'no AVX'}"


def load() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def ort_session(model: Any, threads: int) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def interleaved(fns: list[Callable[[], object]], rounds: int, number: int,
                pause_s: float = 0.1) -> list[list[float]]:
    """Seconds per call of each function in every round (see the module docstring)."""
    times: list[list[float]] = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(rounds):
        for fn, ts in zip(fns, times):
            time.sleep(pause_s)
            fn()
            t0 = CLOCK()
            for _ in range(number):
                fn()
            ts.append((CLOCK() - t0) / number)
    return times


def compare(name: str, model: Any, threads: int, rounds: int, number: int) -> dict[str, Any]:
    """Build ``model`` with mlc, run it against ORT, time both; one table row."""
    from mlc import graph

    dims = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)
    x = np.random.default_rng(0).standard_normal(dims).astype("float32")
    t0 = time.perf_counter()
    mod = graph.build(graph.optimize(graph.from_onnx(model)), target="llvm")
    build_s = time.perf_counter() - t0
    sess = ort_session(model, threads)
    feed = {model.graph.input[0].name: x}
    ref = sess.run(None, feed)[0]
    err = float(np.abs(mod(x=x)[0] - ref).max())
    if not np.allclose(mod(x=x)[0], ref, rtol=1e-3, atol=1e-3):
        raise SystemExit(f"{name}: mlc differs from ONNX Runtime (max abs error {err:.3g})")
    before = load()
    t_mlc, t_ort = interleaved([lambda: mod(x=x), lambda: sess.run(None, feed)], rounds, number)
    ratios = np.array(t_ort) / np.array(t_mlc)
    return {"model": name, "mlc_us": float(np.median(t_mlc)) * 1e6,
            "mlc_spread": (min(t_mlc) * 1e6, max(t_mlc) * 1e6),
            "ort_us": float(np.median(t_ort)) * 1e6,
            "ort_spread": (min(t_ort) * 1e6, max(t_ort) * 1e6),
            "ratio": float(np.median(ratios)), "ratio_spread": (float(ratios.min()),
                                                                float(ratios.max())),
            "kernels": len(mod.kernels), "max_abs_err": err, "build_s": build_s,
            "load": f"{before} -> {load()}"}


def header(threads: int, rounds: int) -> str:
    import onnxruntime

    clock = "CPU time of the one thread" if CLOCK is time.thread_time else "wall time"
    return (f"machine: {machine()}\nthreads: {threads} each (mlc MLC_NUM_THREADS, ORT "
            f"intra_op_num_threads); clock: {clock}; onnxruntime {onnxruntime.__version__}; "
            f"{rounds} "
            f"interleaved rounds; ratio = ORT time / mlc time (above 1: mlc faster), median "
            f"of per-round ratios [min-max]\n\n"
            f"| model | mlc us (min-max) | ORT us (min-max) | ORT/mlc [min-max] | kernels | "
            f"max abs err | load avg (1/5/15 min) before -> after |\n"
            f"|---|---|---|---|---|---|---|")


def row(r: dict[str, Any]) -> str:
    return (f"| {r['model']} | {r['mlc_us']:.1f} ({r['mlc_spread'][0]:.1f}-"
            f"{r['mlc_spread'][1]:.1f}) | {r['ort_us']:.1f} ({r['ort_spread'][0]:.1f}-"
            f"{r['ort_spread'][1]:.1f}) | **{r['ratio']:.2f}x** [{r['ratio_spread'][0]:.2f}-"
            f"{r['ratio_spread'][1]:.2f}] | {r['kernels']} | {r['max_abs_err']:.1e} | "
            f"{r['load']} |")
