"""fp32 GEMM on a real NVIDIA GPU: the MLC course's schedule, searched over its tile sizes,
against cuBLAS (through torch or cupy, whichever is installed), in one run.

    python benchmarks/gpu_gemm.py [--sizes 1024,2048,4096] [--out results.txt]

The schedule is the course's ``blocking_with_shared`` (MLC course, GPU chapter): each block
computes a ``by*ly x bx*lx`` tile of C, each of its ``by*bx`` threads a ``ly x lx`` register
tile (``cache_write(..., "local")``); both operands go through shared memory in slices of
``tk`` along k, fetched cooperatively by all threads with ``vec``-wide vector loads. Each
configuration is built with ``target="cuda"`` (NVRTC), checked against numpy at 256, then
timed with the arrays resident on the GPU (``time_evaluator`` copies once). cuBLAS runs in
strict fp32 (TF32 off), so both sides do the same arithmetic. Needs a GPU; exits 0 with a
note without one.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import mlc
from mlc import te, tir
from mlc.errors import MLCError
from mlc.runtime import cuda_driver


def matmul(n: int) -> tir.PrimFunc:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def schedule(n: int, by: int, bx: int, ly: int, lx: int, tk: int, vec: int) -> tir.Schedule:
    """The course's ``blocking_with_shared`` with its tile sizes as parameters."""
    sch = tir.Schedule(matmul(n))
    c = sch.get_block("C")
    c_local = sch.cache_write(c, 0, "local")
    i, j, k = sch.get_loops(c)
    i0, i1, i2 = sch.split(i, [None, by, ly])
    j0, j1, j2 = sch.split(j, [None, bx, lx])
    k0, k1 = sch.split(k, [None, tk])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.reverse_compute_at(c_local, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    tx = sch.fuse(i1, j1)
    sch.bind(tx, "threadIdx.x")
    for index in (0, 1):
        cache = sch.cache_read(c, index, "shared")
        sch.compute_at(cache, k0)
        a, b = sch.get_loops(cache)[-2:]
        _, t, v = sch.split(sch.fuse(a, b), [None, by * bx, vec])
        sch.vectorize(v)
        sch.bind(t, "threadIdx.x")
    sch.unroll(k1)
    sch.decompose_reduction(c, k0)
    return sch


CONFIGS = [  # (by, bx, ly, lx, tk, vec)
    (8, 8, 4, 4, 8, 4), (8, 8, 8, 8, 8, 4), (16, 16, 4, 4, 8, 4), (16, 16, 8, 8, 8, 4),
    (16, 16, 4, 4, 16, 4), (8, 16, 8, 8, 8, 4), (16, 8, 8, 8, 16, 4), (16, 16, 8, 4, 8, 2),
    (8, 8, 8, 8, 16, 4), (16, 16, 2, 2, 16, 1),
]


def cublas() -> tuple[str, object] | None:
    """A function timing cuBLAS's fp32 GEMM at size n (seconds), and its name."""
    try:
        import torch

        if torch.cuda.is_available():
            torch.backends.cuda.matmul.allow_tf32 = False

            def run_torch(n: int, repeat: int = 20) -> float:
                a = torch.randn(n, n, device="cuda")
                b = torch.randn(n, n, device="cuda")
                torch.mm(a, b)
                torch.cuda.synchronize()
                start, end = torch.cuda.Event(True), torch.cuda.Event(True)
                start.record()
                for _ in range(repeat):
                    torch.mm(a, b)
                end.record()
                torch.cuda.synchronize()
                return start.elapsed_time(end) / 1e3 / repeat

            return f"cuBLAS (torch {torch.__version__}, TF32 off)", run_torch
    except ImportError:
        pass
    try:
        import cupy

        def run_cupy(n: int, repeat: int = 20) -> float:
            a = cupy.random.standard_normal((n, n), dtype=cupy.float32)
            b = cupy.random.standard_normal((n, n), dtype=cupy.float32)
            cupy.matmul(a, b)
            cupy.cuda.Device().synchronize()
            t = time.perf_counter()
            for _ in range(repeat):
                cupy.matmul(a, b)
            cupy.cuda.Device().synchronize()
            return (time.perf_counter() - t) / repeat

        return f"cuBLAS (cupy {cupy.__version__})", run_cupy
    except ImportError:
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1024,2048,4096")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    if not cuda_driver.available():
        print("no NVIDIA GPU here: nothing to measure (cuda-sim runs the same kernels on the "
              "CPU, but its times say nothing about a GPU)")
        return 0
    say(f"GPU arch {cuda_driver.context().arch()}")
    rng = np.random.default_rng(0)
    small = 256
    a = rng.standard_normal((small, small)).astype("float32")
    b = rng.standard_normal((small, small)).astype("float32")
    good = []
    for cfg in CONFIGS:
        try:
            t0 = time.perf_counter()
            f = mlc.build(schedule(small, *cfg).mod, target="cuda")
            c = np.full((small, small), np.nan, "float32")
            f(a, b, c)
            ok = np.allclose(c, a @ b, rtol=1e-3, atol=1e-3)
            say(f"config {cfg}: {'correct' if ok else 'WRONG'} at {small} "
                f"(built in {time.perf_counter() - t0:.2f} s)")
            if ok:
                good.append(cfg)
        except MLCError as err:
            say(f"config {cfg}: refused: {type(err).__name__}: {str(err)[:160]}")
    blas = cublas()
    say("")
    say(f"{'n':>6} {'best mlc config (by,bx,ly,lx,tk,vec)':>38} {'mlc GFLOPS':>11} "
        f"{'cuBLAS GFLOPS':>14} {'mlc/cuBLAS':>11}")
    for n in (int(s) for s in args.sizes.split(",")):
        x = rng.standard_normal((n, n)).astype("float32")
        w = rng.standard_normal((n, n)).astype("float32")
        y = np.zeros((n, n), "float32")
        best: tuple[float, tuple[int, ...]] | None = None
        for cfg in good:
            if n % (cfg[0] * cfg[2]) or n % (cfg[1] * cfg[3]) or n % cfg[4]:
                continue
            f = mlc.build(schedule(n, *cfg).mod, target="cuda")
            seconds = f.time_evaluator(number=5, repeat=3)(x, w, y).median
            if best is None or seconds < best[0]:
                best = (seconds, cfg)
        if n <= 2048:  # the result of the last timed call, against numpy
            f = mlc.build(schedule(n, *best[1]).mod, target="cuda") if best else None
            if f is not None:
                f(x, w, y)
                err = float(np.abs(y - x @ w).max() / np.abs(x @ w).max())
                say(f"  n={n}: the best kernel's largest relative error vs numpy {err:.1e}")
        flops = 2 * n**3
        mlc_gflops = flops / best[0] / 1e9 if best else float("nan")
        blas_gflops = flops / blas[1](n) / 1e9 if blas else float("nan")
        say(f"{n:>6} {str(best[1] if best else '-'):>38} {mlc_gflops:>11.0f} "
            f"{blas_gflops:>14.0f} {mlc_gflops / blas_gflops:>11.2f}")
    if blas:
        say(f"reference: {blas[0]}")
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
