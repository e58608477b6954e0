"""The CPU GEMM journey at 1024^3 fp32, step by step, timed against numpy in one run.

    python benchmarks/gemm.py [--size 1024] [--repeat 3] [--json] [--steps naive,blocking,...]
                              [--tvm | --no-tvm]

Each step adds one idea of TVM's "How to optimize GEMM on CPU" tutorial (blocking,
vectorization, loop permutation, array packing, a write cache, parallel loops, unrolling),
written with ``tir.Schedule``. numpy's matmul is timed interleaved with each kernel (rounds
alternate), so the ratio holds even on a noisy machine. The machine's peak comes from a
small FMA kernel built with mlc itself (``benchmarks/peak.py``).

With ``--tvm`` (the default when ``apache-tvm`` is importable: ``pip install -e ".[bench]"``)
each step is also written with TVM's own TensorIR schedule (``benchmarks/tvm_side.py``),
compiled by TVM and timed in the same interleaved rounds, so the table shows mlc, TVM and
numpy side by side: their GFLOPS, the ratios mlc/numpy, TVM/numpy and mlc/TVM, and the
compile time of both. ``--no-tvm`` leaves TVM out (and never imports it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mlc  # noqa: E402
from mlc import te, tir  # noqa: E402
from mlc.tir import PrimFunc  # noqa: E402

BN = 32  # block size of the output tile
KF = 4  # reduction split


def matmul(n: int) -> list[te.Tensor]:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return [A, B, C]


def packed_matmul(n: int) -> list[te.Tensor]:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    packedB = te.compute((n // BN, n, BN), lambda x, y, z: B[y, x * BN + z], name="packedB")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute(
        (n, n), lambda i, j: te.sum(A[i, k] * packedB[j // BN, k, j % BN], axis=k), name="C"
    )
    return [A, B, C]


def naive(n: int) -> PrimFunc:
    return te.create_prim_func(matmul(n))


def _blocked(n: int, order: str, vectorize: bool) -> tir.Schedule:
    sch = tir.Schedule(te.create_prim_func(matmul(n)))
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, factors=[None, BN])
    jo, ji = sch.split(j, factors=[None, BN])
    ko, ki = sch.split(k, factors=[None, KF])
    if order == "blocking":
        sch.reorder(io, jo, ko, ki, ii, ji)
    else:  # loop permutation: walk A's rows while the tile of C stays in cache
        sch.reorder(io, jo, ko, ii, ki, ji)
    if vectorize:
        sch.vectorize(ji)
    return sch


def blocking(n: int) -> PrimFunc:
    return _blocked(n, "blocking", vectorize=False).mod


def vectorization(n: int) -> PrimFunc:
    return _blocked(n, "blocking", vectorize=True).mod


def loop_permutation(n: int) -> PrimFunc:
    return _blocked(n, "permutation", vectorize=True).mod


def _packed(n: int, write_cache: bool, parallel: bool) -> PrimFunc:
    sch = tir.Schedule(te.create_prim_func(packed_matmul(n)))
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, factors=[None, BN])
    jo, ji = sch.split(j, factors=[None, BN])
    ko, ki = sch.split(k, factors=[None, KF])
    sch.reorder(io, jo, ko, ii, ki, ji)
    if write_cache:
        cc = sch.cache_write(c, 0, "local")
        sch.reverse_compute_at(cc, jo)
        init = sch.decompose_reduction(c, ko)
        sch.vectorize(sch.get_loops(init)[-1])  # as tvm_side.py does: the same schedule
        sch.unroll(ki)
        x, y = sch.get_loops(cc)[-2:]
        sch.vectorize(y)
    sch.vectorize(ji)
    if parallel:
        sch.parallel(io)
    # the packing itself: parallel over panels, vectorized copy
    p = sch.get_block("packedB")
    px, py, pz = sch.get_loops(p)
    if parallel:
        sch.parallel(px)
    sch.vectorize(pz)
    return sch.mod


def array_packing(n: int) -> PrimFunc:
    return _packed(n, write_cache=False, parallel=False)


def write_cache(n: int) -> PrimFunc:
    return _packed(n, write_cache=True, parallel=False)


def parallel(n: int) -> PrimFunc:
    return _packed(n, write_cache=True, parallel=True)


STEPS: dict[str, Callable[[int], PrimFunc]] = {
    "naive": naive,
    "blocking": blocking,
    "vectorization": vectorization,
    "loop_permutation": loop_permutation,
    "array_packing": array_packing,
    "write_cache": write_cache,
    "parallel+unroll": parallel,
}


def interleaved(kernel: Callable[[], object], reference: Callable[[], object], rounds: int,
                number: int) -> tuple[float, float]:
    """Median seconds per call of ``kernel`` and ``reference``, timed in alternating rounds."""
    t_kernel, t_reference = interleaved_all([kernel, reference], rounds, number)
    return t_kernel, t_reference


def interleaved_all(fns: list[Callable[[], object]], rounds: int, number: int,
                    settle_s: float = 0.2) -> list[float]:
    """Median seconds per call of each of ``fns``; every round times each once, in turn.

    Before each timed batch the machine idles ``settle_s`` (not timed): thread pools that
    spin after a call (OpenBLAS's for about 0.1 s, TVM's briefly) would otherwise steal the
    cores from whichever contender runs next -- measured here, TVM's parallel GEMM right
    after ``np.matmul`` ran at 0.4x of its speed.
    """
    times: list[list[float]] = [[] for _ in fns]
    for fn in fns:  # warm up
        fn()
    for _ in range(rounds):
        for fn, ts in zip(fns, times):
            time.sleep(settle_s)
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            ts.append((time.perf_counter() - t0) / number)
    return [float(np.median(ts)) for ts in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", default=",".join(STEPS))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--tvm", action=argparse.BooleanOptionalAction,
                        default=importlib.util.find_spec("tvm") is not None,
                        help="time TVM's build of each step beside mlc's "
                             "(default: when apache-tvm is importable)")
    args = parser.parse_args()
    tvm_bench: Any = None  # benchmarks/tvm_side.py, imported (with TVM) only for --tvm
    if args.tvm:
        import tvm_side  # noqa: E402

        if not tvm_side.available():
            parser.error("--tvm: apache-tvm is not importable (pip install -e \".[bench]\")")
        tvm_bench = tvm_side
    n = args.size
    flop = 2.0 * n**3
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype="float32")
    b = rng.random((n, n), dtype="float32")
    c = np.zeros((n, n), dtype="float32")
    want = a @ b
    from peak import measure_peak  # noqa: E402

    peak = measure_peak()
    mlc.build(naive(BN))  # one-time start-up (LLVM, the thread pool) out of the first compile
    rows = []
    for name in args.steps.split(","):
        t0, c0 = time.perf_counter(), time.process_time()
        func = STEPS[name](n)
        f = mlc.build(func, target="llvm", name=name)
        compile_s, compile_cpu_s = time.perf_counter() - t0, time.process_time() - c0
        f(a, b, c)
        ok = bool(np.allclose(c, want, rtol=1e-3, atol=1e-2))
        slow = name in ("naive", "blocking")
        number = 1 if slow else max(1, int(0.2 / max(flop / 50e9, 1e-4)))
        contenders: list[Callable[[], object]] = [partial(f, a, b, c), partial(np.matmul, a, b)]
        tvm_row: dict[str, Any] = {}
        if tvm_bench is not None:
            tg = tvm_bench.build_gemm(name, n)  # its compile_s is tvm_compile_time(name, n)
            tg.set_inputs(a, b)
            tg.kernel()
            tvm_row = {"tvm_compile_s": tg.compile_s, "tvm_compile_cpu_s": tg.compile_cpu_s,
                       "tvm_correct": bool(np.allclose(tg.result(), want, rtol=1e-3, atol=1e-2))}
            contenders.append(tg.kernel)
        t_mlc, t_np, *t_tvm = interleaved_all(contenders, args.repeat, number)
        row = {
            "step": name, "gflops": flop / t_mlc / 1e9, "numpy_gflops": flop / t_np / 1e9,
            "ratio_to_numpy": t_np / t_mlc, "fraction_of_peak": flop / t_mlc / 1e9 / peak,
            "compile_s": compile_s, "compile_cpu_s": compile_cpu_s, "correct": ok,
        }
        if t_tvm:
            row.update({
                "tvm_gflops": flop / t_tvm[0] / 1e9, "tvm_ratio_to_numpy": t_np / t_tvm[0],
                "mlc_over_tvm": t_tvm[0] / t_mlc, **tvm_row,
            })
        rows.append(row)
    if args.json:
        tvm_version = tvm_bench.version() if tvm_bench is not None else None
        print(json.dumps({"size": n, "peak_gflops": peak, "tvm": tvm_version, "steps": rows},
                         indent=2))
        return
    print(f"GEMM {n}x{n}x{n} fp32; machine peak (mlc FMA kernel): {peak:.0f} GFLOPS")
    if tvm_bench is not None:
        print_with_tvm(rows)
        return
    print(f"{'step':<18}{'GFLOPS':>9}{'numpy':>9}{'x numpy':>9}{'of peak':>9}{'compile':>9}"
          f"{'cpu':>7}  ok")
    for r in rows:
        print(f"{r['step']:<18}{r['gflops']:>9.1f}{r['numpy_gflops']:>9.1f}"
              f"{r['ratio_to_numpy']:>9.2f}{r['fraction_of_peak']:>9.0%}"
              f"{r['compile_s'] * 1e3:>7.0f}ms{r['compile_cpu_s'] * 1e3:>5.0f}ms"
              f"  {'yes' if r['correct'] else 'NO'}")


def print_with_tvm(rows: list[dict[str, Any]]) -> None:
    """The table with TVM beside mlc: GFLOPS of each, the three ratios, both compile times."""
    print(f"{'step':<18}{'mlc':>8}{'TVM':>8}{'numpy':>8}{'mlc/np':>8}{'TVM/np':>8}"
          f"{'mlc/TVM':>8}{'of peak':>8}{'mlc cc':>8}{'TVM cc':>8}{'mlc cpu':>8}{'TVM cpu':>8}"
          "  ok (GFLOPS; cc: compile wall, cpu: compile CPU time)")
    for r in rows:
        ok = "yes" if r["correct"] and r["tvm_correct"] else \
            f"mlc {'yes' if r['correct'] else 'NO'}, TVM {'yes' if r['tvm_correct'] else 'NO'}"
        print(f"{r['step']:<18}{r['gflops']:>8.1f}{r['tvm_gflops']:>8.1f}{r['numpy_gflops']:>8.1f}"
              f"{r['ratio_to_numpy']:>8.2f}{r['tvm_ratio_to_numpy']:>8.2f}"
              f"{r['mlc_over_tvm']:>8.2f}{r['fraction_of_peak']:>8.0%}"
              f"{r['compile_s'] * 1e3:>6.0f}ms{r['tvm_compile_s'] * 1e3:>6.0f}ms"
              f"{r['compile_cpu_s'] * 1e3:>6.0f}ms{r['tvm_compile_cpu_s'] * 1e3:>6.0f}ms  {ok}")


if __name__ == "__main__":
    main()
