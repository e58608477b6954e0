"""What the run-time checks cost: each kernel built with and without them, timed interleaved.

    python benchmarks/checks_cost.py [--rounds 9]

mlc checks at run time what it cannot prove before (indices read from data, indices over
symbolic sizes, integer divisors). ``mlc.build(..., bounds_check=False)`` leaves the index
checks out (divisor checks stay). Each kernel below is built both ways and the two builds are
timed in alternating rounds after a short pause; the table gives the medians, the cost
``checked / unchecked - 1`` and how often its LLVM IR uses the error record (0: nothing is
checked at run time, so the cost is nil by construction). Kernels: the GEMM of
``benchmarks/gemm.py`` (constant shapes: nothing left to
check), the same GEMM over a symbolic ``n``, an embedding gather (every index read from data),
and the digits MLP as one graph module at batch 64.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mlc  # noqa: E402
from mlc import config, graph, te  # noqa: E402


def gemm(n: int | te.Var, size: int) -> tuple[Callable[[bool], Callable[[], None]], str]:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    io, jo, ii, ji = s[C].tile(i, j, 32, 32)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    rng = np.random.default_rng(0)
    a = rng.random((size, size), dtype=np.float32)
    b = rng.random((size, size), dtype=np.float32)
    c = np.zeros((size, size), np.float32)

    def make(checked: bool) -> Callable[[], None]:
        f = mlc.build(s, [A, B, C], bounds_check=checked)
        return lambda: f(a, b, c)

    return make, ir_of(s, [A, B, C])


def gather(rows: int, dim: int, count: int) -> tuple[Callable[[bool], Callable[[], None]], str]:
    n = te.var("n")
    table = te.placeholder((rows, dim), name="table")
    idx = te.placeholder((n,), "int32", name="idx")
    out = te.compute((n, dim), lambda i, j: table[idx[i], j], name="out")
    s = te.create_schedule(out.op)
    s[out].vectorize(out.op.axis[1])
    rng = np.random.default_rng(0)
    t = rng.random((rows, dim), dtype=np.float32)
    ix = rng.integers(0, rows, count).astype(np.int32)
    o = np.zeros((count, dim), np.float32)

    def make(checked: bool) -> Callable[[], None]:
        f = mlc.build(s, [table, idx, out], bounds_check=checked)
        return lambda: f(t, ix, o)

    return make, ir_of(s, [table, idx, out])


def mlp(batch: int) -> tuple[Callable[[bool], Callable[[], None]], str]:
    from mlc.examples.mlp import load_data, mlp_graph, train_mlp

    x_train, y_train, x_test, _ = load_data()
    params = train_mlp(x_train, y_train, epochs=2)
    x = x_test[:batch]

    def make(checked: bool) -> Callable[[], None]:
        with config.bounds_checks(checked):
            mod = graph.build(graph.optimize(mlp_graph(params, batch)), target="llvm")
        return lambda: mod(x=x)

    with config.bounds_checks(True):
        mod = graph.build(graph.optimize(mlp_graph(params, batch)), target="llvm")
    return make, mod.module.get_source("ll") if mod.module is not None else ""


def ir_of(s: te.Schedule, args: list[te.Tensor]) -> str:
    return mlc.build(s, args).get_source("ll")


def checks_in(ir: str) -> str:
    """Uses of the error record in the LLVM IR (0: the kernel checks nothing at run time)."""
    return str(ir.count("@__mlc_error")) if ir else "-"


def timed(call: Callable[[], None], min_time: float = 0.05) -> float:
    call()
    number, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_time:
        call()
        number += 1
    return (time.perf_counter() - start) / number


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--size", type=int, default=512)
    args = parser.parse_args()
    kernels = {
        f"GEMM {args.size}^3, constant shapes": gemm(args.size, args.size),
        f"GEMM {args.size}^3, symbolic n": gemm(te.var("n"), args.size),
        "gather 100k x 64 table, 200k rows": gather(100_000, 64, 200_000),
        "digits MLP, batch 64 (graph)": mlp(64),
    }
    print(f"{'kernel':<36} {'checked ms':>11} {'unchecked ms':>13} {'cost':>7} {'record uses':>12}")
    for name, (make, ir) in kernels.items():
        with_checks, without = make(True), make(False)
        times: dict[bool, list[float]] = {True: [], False: []}
        for r in range(args.rounds):
            for checked in ((True, False) if r % 2 == 0 else (False, True)):
                time.sleep(0.1)
                times[checked].append(timed(with_checks if checked else without))
        t_on, t_off = statistics.median(times[True]), statistics.median(times[False])
        print(f"{name:<36} {t_on * 1e3:>11.3f} {t_off * 1e3:>13.3f} "
              f"{(t_on / t_off - 1) * 100:>6.1f}% {checks_in(ir):>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
