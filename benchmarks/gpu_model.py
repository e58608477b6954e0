"""The GPU performance model against a real GPU: predicted and measured time per kernel.

    python benchmarks/gpu_model.py [--sizes 1024,2048] [--gpu h100] [--out table.md]
                                   [--number 10] [--repeat 5] [--json]

For each kernel (elementwise add, naive matmul, shared-memory tiled matmul, register-tiled
matmul through ``cache_write(..., "local")``, and the course's GEMM schedule of
``benchmarks/gpu_gemm.py`` at three tile configurations, at each size) it prints what
:mod:`mlc.target.cuda_sim.model` predicts for the named GPU profile (the kernel's time,
GFLOP/s, the bottleneck, the counts behind it). When a GPU is present
(``mlc.runtime.cuda_driver.available()``) the same kernel is built with ``target="cuda"``,
timed with ``time_evaluator`` and the error of the model is shown. A timed call launches the
kernel and waits for it from Python: that costs a *floor* the model leaves out (it predicts
the kernel), measured here as the time of an empty kernel (one thread that does nothing) and
added to the prediction: the error is (predicted + floor) / measured. A matmul is also timed
with cuBLAS through torch or cupy when one is importable (the ratio mlc / cuBLAS is their
times' ratio, > 1 means mlc is slower). Without a GPU only the predictions are printed.
Needs only numpy, llvmlite and mlc (torch and cupy are optional).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_gemm import schedule as gemm_schedule  # noqa: E402

import mlc  # noqa: E402
from mlc import te, tir  # noqa: E402
from mlc.runtime import cuda_driver  # noqa: E402
from mlc.target.cuda_sim.model import PROFILES, predict  # noqa: E402

# -- the kernels, as a student writes them (notebook 08) -----------------------------------

def matmul(n: int) -> tir.PrimFunc:
    X = te.placeholder((n, n), name="X")
    W = te.placeholder((n, n), name="W")
    k = te.reduce_axis((0, n), name="k")
    Y = te.compute((n, n), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    return te.create_prim_func([X, W, Y])


def elementwise(n: int) -> tir.Schedule:
    """y = a + b over n * n elements, 256 threads per block."""
    A = te.placeholder((n * n,), name="A")
    B = te.placeholder((n * n,), name="B")
    C = te.compute((n * n,), lambda i: A[i] + B[i], name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    (i,) = sch.get_loops(sch.get_block("C"))
    bx, tx = sch.split(i, factors=[None, 256])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch


def naive_matmul(n: int, tile: int = 16) -> tir.Schedule:
    """One thread per output element, reading X and W from global memory."""
    sch = tir.Schedule(matmul(n))
    i, j, _ = sch.get_loops(sch.get_block("Y"))
    bi, ti = sch.split(i, factors=[None, tile])
    bj, tj = sch.split(j, factors=[None, tile])
    sch.reorder(bi, bj, ti, tj)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    return sch


def shared_matmul(n: int, tile: int = 16) -> tir.Schedule:
    """Tiles of X and W staged in shared memory, one element per thread."""
    sch = tir.Schedule(matmul(n))
    blk = sch.get_block("Y")
    i, j, k = sch.get_loops(blk)
    bi, ti = sch.split(i, factors=[None, tile])
    bj, tj = sch.split(j, factors=[None, tile])
    ko, ki = sch.split(k, factors=[None, tile])
    sch.reorder(bi, bj, ko, ti, tj, ki)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    for index in (0, 1):
        copy = sch.cache_read(blk, index, "shared")
        sch.compute_at(copy, ko)
        rows, cols = sch.get_loops(copy)[-2:]
        sch.bind(rows, "threadIdx.y")
        sch.bind(cols, "threadIdx.x")
    return sch


def register_matmul(n: int, threads: int = 16, regs: int = 4, bk: int = 16) -> tir.Schedule:
    """Each thread accumulates a regs x regs tile in registers (cache_write "local"); the
    block's (threads*regs)^2 tile reads X and W through shared memory."""
    sch = tir.Schedule(matmul(n))
    blk = sch.get_block("Y")
    i, j, k = sch.get_loops(blk)
    bi, ti, ii = sch.split(i, factors=[None, threads, regs])
    bj, tj, jj = sch.split(j, factors=[None, threads, regs])
    ko, ki = sch.split(k, factors=[None, bk])
    sch.reorder(bi, bj, ti, tj, ko, ki, ii, jj)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    local = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(local, tj)
    for index in (0, 1):
        copy = sch.cache_read(blk, index, "shared")
        sch.compute_at(copy, ko)
        fused = sch.fuse(*sch.get_loops(copy)[-2:])
        _, cy, cx = sch.split(fused, factors=[None, threads, threads])
        sch.bind(cy, "threadIdx.y")
        sch.bind(cx, "threadIdx.x")
    sch.unroll(ki)
    sch.vectorize(jj)  # float4 reads of W_shared: whole 16-byte words, no bank conflicts
    return sch


# the course's blocking_with_shared (benchmarks/gpu_gemm.py): (by, bx, ly, lx, tk, vec), the
# fastest configuration at 1024 and at 4096 on an H100, and a small one
GEMM_CONFIGS = [(16, 16, 4, 4, 16, 4), (8, 16, 8, 8, 8, 4), (8, 8, 4, 4, 8, 4)]


def gemm(config: tuple[int, ...]) -> Callable[[int], tir.Schedule]:
    def make(n: int) -> tir.Schedule:
        return gemm_schedule(n, *config)
    return make


def kernels(sizes: list[int]) -> list[tuple[str, int, Callable[[int], tir.Schedule], str]]:
    out = []
    for n in sizes:
        out += [("elementwise", n, elementwise, "add"), ("naive matmul", n, naive_matmul, "mm"),
                ("shared-tiled matmul", n, shared_matmul, "mm"),
                ("register-tiled matmul", n, register_matmul, "mm")]
        out += [(f"gemm {','.join(map(str, c))}", n, gemm(c), "mm") for c in GEMM_CONFIGS]
    return out


def empty_kernel() -> tir.Schedule:
    """One block of one thread copying one float: the cost of a timed call without work."""
    A = te.placeholder((1,), name="A")
    B = te.compute((1,), lambda i: A[i], name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops(sch.get_block("B"))
    bx, tx = sch.split(i, factors=[1, 1])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch


def launch_floor(number: int, repeat: int) -> float:
    """The median time of a timed call of the empty kernel (launch + wait), seconds."""
    f = mlc.build(empty_kernel().mod, target="cuda")
    a, b = np.ones(1, np.float32), np.zeros(1, np.float32)
    f(a, b)
    return float(f.time_evaluator(number=number, repeat=repeat)(a, b).median)


def arrays(kind: str, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    if kind == "add":
        return [rng.random(n * n, dtype=np.float32), rng.random(n * n, dtype=np.float32),
                np.zeros(n * n, np.float32)]
    return [rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32),
            np.zeros((n, n), np.float32)]


# -- measuring -----------------------------------------------------------------------------

def measure_gpu(sch: tir.Schedule, args: list[np.ndarray], kind: str, number: int,
                repeat: int) -> tuple[float, bool]:
    """The median time of the kernel on the GPU, and whether its result matches numpy."""
    f = mlc.build(sch.mod, target="cuda")
    out = [a.copy() for a in args]
    f(*out)
    want = args[0] + args[1] if kind == "add" else args[0] @ args[1]
    ok = bool(np.allclose(out[2], want, rtol=1e-3, atol=1e-3))
    t = f.time_evaluator(number=number, repeat=repeat)(*[a.copy() for a in args])
    return float(t.median), ok


def cublas_time(n: int, number: int, repeat: int) -> tuple[float, str] | None:
    """cuBLAS's fp32 n x n matmul through torch or cupy (median seconds), if importable."""
    try:
        import torch

        if torch.cuda.is_available():
            torch.backends.cuda.matmul.allow_tf32 = False  # plain fp32, as mlc's kernels
            a = torch.rand(n, n, device="cuda")
            b = torch.rand(n, n, device="cuda")
            torch.matmul(a, b)
            torch.cuda.synchronize()
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                for _ in range(number):
                    torch.matmul(a, b)
                torch.cuda.synchronize()
                times.append((time.perf_counter() - start) / number)
            return float(np.median(times)), f"torch {torch.__version__} (cuBLAS, no TF32)"
    except Exception:  # noqa: BLE001 - an optional comparison never stops the benchmark
        pass
    try:
        import cupy

        a = cupy.random.rand(n, n, dtype=cupy.float32)
        b = cupy.random.rand(n, n, dtype=cupy.float32)
        a @ b
        cupy.cuda.Device().synchronize()
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                a @ b
            cupy.cuda.Device().synchronize()
            times.append((time.perf_counter() - start) / number)
        return float(np.median(times)), f"cupy {cupy.__version__} (cuBLAS)"
    except Exception:  # noqa: BLE001
        return None


# -- the table -----------------------------------------------------------------------------

def run(sizes: list[int], gpu: str, number: int, repeat: int,
        on_gpu: bool, only: list[str] | None = None) -> tuple[list[dict[str, Any]], str]:
    rows: list[dict[str, Any]] = []
    cublas: dict[int, tuple[float, str] | None] = {}
    floor = launch_floor(number, repeat) if on_gpu else 0.0
    if on_gpu:
        print(f"floor (an empty kernel, launch + wait): {floor * 1e6:.1f} us", flush=True)
    for name, n, make, kind in kernels(sizes):
        if only and not any(k in name for k in only):
            continue
        row: dict[str, Any] = {"kernel": name, "n": n}
        try:
            sch = make(n)
            args = arrays(kind, n)
            start = time.perf_counter()
            p = predict(mlc.lower(sch.mod, target="cuda-sim"), *args, gpu=gpu)
            k = p.kernels[0]
            c = k.counts
            row.update(
                predicted_us=p.time * 1e6, predicted_gflops=p.flops / p.time / 1e9,
                bound=k.bound, occupancy=c.occupancy, coalescing=c.coalescing,
                bank_conflicts=c.bank_conflict_factor, model_s=time.perf_counter() - start,
                flops=p.flops,
            )
            if on_gpu:
                row["floor_us"] = floor * 1e6
                measure_into(row, sch, args, kind, n, number, repeat, cublas, p.flops,
                             p.time + floor)
        except Exception as err:  # noqa: BLE001 - one failing kernel is a row, not a crash
            row["error_message"] = f"{type(err).__name__}: {str(err).splitlines()[0]}"
        rows.append(row)
        print(_line(row), flush=True)
    return rows, _table(rows, gpu, on_gpu, cublas, floor)


def measure_into(row: dict[str, Any], sch: tir.Schedule, args: list[np.ndarray], kind: str,
                 n: int, number: int, repeat: int,
                 cublas: dict[int, tuple[float, str] | None], flops: float,
                 predicted: float) -> None:
    """The GPU columns of a row (a failure here keeps the prediction and says why)."""
    try:
        measured, ok = measure_gpu(sch, args, kind, number, repeat)
    except Exception as err:  # noqa: BLE001
        row["gpu_error"] = f"{type(err).__name__}: {str(err).splitlines()[0]}"
        return
    row.update(measured_us=measured * 1e6, correct=ok, measured_gflops=flops / measured / 1e9,
               error=predicted / measured)
    if kind == "mm":
        if n not in cublas:
            cublas[n] = cublas_time(n, number, repeat)
        if cublas[n] is not None:
            row.update(cublas_us=cublas[n][0] * 1e6, cublas_by=cublas[n][1],
                       mlc_over_cublas=measured / cublas[n][0])


def _fmt(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _line(row: dict[str, Any]) -> str:
    if "error_message" in row:
        return f"{row['kernel']:24s} n={row['n']:5d}  FAILED {row['error_message']}"
    s = (f"{row['kernel']:24s} n={row['n']:5d}  predicted {row['predicted_us']:10.1f} us "
         f"({row['bound']})")
    if "measured_us" in row:
        s += f"  measured {row['measured_us']:10.1f} us  predicted/measured {row['error']:.2f}"
    if "gpu_error" in row:
        s += f"  GPU run failed: {row['gpu_error']}"
    if "mlc_over_cublas" in row:
        s += f"  mlc/cuBLAS {row['mlc_over_cublas']:.2f}"
    return s


def _table(rows: list[dict[str, Any]], gpu: str, on_gpu: bool,
           cublas: dict[int, tuple[float, str] | None], floor: float = 0.0) -> str:
    head = (f"# GPU model: predicted on `{gpu}` ({PROFILES[gpu].name})"
            + (f"; measured on {_device_name()}" if on_gpu else "; no GPU here (predictions only)"))
    if on_gpu:
        head += (f"\n\nfloor: {floor * 1e6:.1f} us, a timed call of an empty kernel (launch + "
                 "wait); pred/meas = (predicted + floor) / measured")
    cols = ["kernel", "n", "predicted us", "pred GFLOP/s", "bound", "occupancy", "coalescing",
            "bank conflicts"]
    if on_gpu:
        cols += ["measured us", "meas GFLOP/s", "pred/meas", "correct", "cuBLAS us",
                 "mlc/cuBLAS"]
    lines = [head, "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        if "error_message" in r:
            lines.append(f"| {r['kernel']} | {r['n']} | failed: {r['error_message']} |")
            continue
        cells = [r["kernel"], str(r["n"]), _fmt(r["predicted_us"], ".1f"),
                 _fmt(r["predicted_gflops"], ".0f"), r["bound"], _fmt(r["occupancy"], ".2f"),
                 _fmt(r["coalescing"], ".2f"), _fmt(r["bank_conflicts"], ".2f")]
        if on_gpu:
            cells += [_fmt(r.get("measured_us"), ".1f"), _fmt(r.get("measured_gflops"), ".0f"),
                      _fmt(r.get("error"), ".2f"), str(r.get("correct", "-")),
                      _fmt(r.get("cublas_us"), ".1f"), _fmt(r.get("mlc_over_cublas"), ".2f")]
            if "gpu_error" in r:
                cells[-6] = "failed: " + r["gpu_error"]
        lines.append("| " + " | ".join(cells) + " |")
    if on_gpu:
        errs = [r["error"] for r in rows if "error" in r]
        if errs:
            geo = float(np.exp(np.mean(np.log(errs))))
            worst = max(errs, key=lambda e: abs(np.log(e)))
            lines += ["", f"model error (predicted/measured): geometric mean {geo:.2f}, "
                          f"worst {worst:.2f}, over {len(errs)} kernels"]
        used = {v[1] for v in cublas.values() if v is not None}
        lines.append("cuBLAS: " + (", ".join(sorted(used)) if used else
                                   "not measured (neither torch with CUDA nor cupy importable)"))
    return "\n".join(lines) + "\n"


def _device_name() -> str:
    try:
        return f"a CUDA GPU ({cuda_driver.context().arch()})"
    except Exception:  # noqa: BLE001
        return "a CUDA GPU"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1024,2048")
    parser.add_argument("--gpu", default="h100", choices=sorted(PROFILES))
    parser.add_argument("--out", default=None, help="write the table (markdown) here")
    parser.add_argument("--number", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="also print the rows as JSON")
    parser.add_argument("--no-gpu", action="store_true", help="predictions only")
    parser.add_argument("--kernels", default="",
                        help="only kernels whose name contains one of these (comma-separated)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    on_gpu = not args.no_gpu and cuda_driver.available()
    print(f"GPU present: {on_gpu}; model profile: {args.gpu}", flush=True)
    rows, table = run(sizes, args.gpu, args.number, args.repeat, on_gpu,
                      [k for k in args.kernels.split(",") if k])
    print()
    print(table)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(table)
        Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=1))
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
