"""Latency hiding on the VDLA simulator: simulated cycles with one and two virtual threads.

    python benchmarks/vdla.py [--n 1024] [--json]

For the 1024^3 int8 GEMM (the notes' schedule: 8x8x8 tensor instructions, blocks of 16x16 tiles,
16 tiles of K per step) and for a 3x3 convolution layer of a small ResNet (stride 1, padding 1,
batch 8, 64 -> 64 channels on 32x32, bias + ReLU + 2x2 max-pool on the ALU), it prints the
simulated cycles with 1 and 2 virtual threads (the GEMM also through the compiler: the te
schedule built with ``target="vdla"``, blocks of 128, 128 of K a step), the reduction, and the
compute utilization (the fraction of cycles the GEMM core works), next to the TVM paper's 70% ->
88% on ResNet layers; and the quantized digits MLP split across CPU and accelerator
(``mlc.graph.hetero``: its three dense layers on VDLA, the test set as one batch).
Simulated cycles are deterministic: the same on every machine. The wall
time of the simulator itself is printed too (target: the 1024^3 GEMM in under 10 s). Each result
is checked against numpy before it is reported.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from mlc.vdla.conv import ConvTiling, conv2d, conv2d_reference
from mlc.vdla.gemm import GemmTiling, gemm

PAPER = (0.70, 0.88)


def run_gemm(n: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (n, n), dtype=np.int8)
    w = rng.integers(-128, 128, (n, n), dtype=np.int8)
    ref = a.astype(np.int64) @ w.T.astype(np.int64)
    row: dict[str, float] = {}
    for threads in (1, 2):
        t0 = time.perf_counter()
        c, stats, _ = gemm(a, w, GemmTiling(16, 16, 16), threads)
        row[f"wall_{threads}"] = time.perf_counter() - t0
        if not np.array_equal(c, ref):
            raise SystemExit(f"GEMM with {threads} virtual thread(s) does not match numpy")
        row[f"cycles_{threads}"] = stats.cycles
        row[f"util_{threads}"] = stats.utilization
    return row


def run_compiled(n: int, block: int = 128, kblock: int = 128) -> dict[str, float]:
    """The same GEMM through the compiler: the notes' te schedule built with
    ``target="vdla"`` (blocks of ``block``, ``kblock`` of K per step)."""
    import mlc
    from mlc.vdla.schedules import gemm_schedule

    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (n, n), dtype=np.int8)
    w = rng.integers(-128, 128, (n, n), dtype=np.int8)
    ref = a.astype(np.int64) @ w.T.astype(np.int64)
    row: dict[str, float] = {}
    for threads in (1, 2):
        t0 = time.perf_counter()
        s, args = gemm_schedule(n, n, n, block=block, kblock=kblock, threads=threads)
        f = mlc.build(s, args, target="vdla")
        c = np.zeros((n, n), np.int32)
        stats = f(a, w, c)
        row[f"wall_{threads}"] = time.perf_counter() - t0
        if not np.array_equal(c, ref):
            raise SystemExit(f"compiled GEMM with {threads} virtual thread(s) is wrong")
        row[f"cycles_{threads}"] = stats.cycles
        row[f"util_{threads}"] = stats.utilization
    return row


def run_conv() -> dict[str, float]:
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (8, 64, 32, 32), dtype=np.int8)
    w = rng.integers(-8, 8, (64, 64, 3, 3), dtype=np.int8)
    bias = rng.integers(-2000, 2000, 64, dtype=np.int32)
    ref = conv2d_reference(x, w, bias, shift=8, pool=True)
    row: dict[str, float] = {}
    for threads in (1, 2):
        t0 = time.perf_counter()
        out, stats, _ = conv2d(x, w, bias, shift=8, pool=True, tiling=ConvTiling(),
                               virtual_threads=threads)
        row[f"wall_{threads}"] = time.perf_counter() - t0
        if not np.array_equal(out, ref):
            raise SystemExit(f"conv2d with {threads} virtual thread(s) does not match numpy")
        row[f"cycles_{threads}"] = stats.cycles
        row[f"util_{threads}"] = stats.utilization
    return row


def run_mlp() -> dict[str, float]:
    """The digits MLP split across CPU and VDLA (mlc.graph.hetero), the test set as one
    batch: cycles and utilization of its three dense layers together."""
    from mlc.examples.mlp import load_data, train_mlp
    from mlc.graph.hetero import build_hetero_mlp, integer_forward, quantize_mlp_for_vdla

    x_train, y_train, x_test, _ = load_data()
    qm = quantize_mlp_for_vdla(train_mlp(x_train, y_train), x_train)
    ref = integer_forward(qm, x_test)
    row: dict[str, float] = {}
    for threads in (1, 2):
        t0 = time.perf_counter()
        net = build_hetero_mlp(qm, len(x_test), threads=threads)
        if not np.array_equal(net.logits(x_test), ref):
            raise SystemExit(f"the MLP with {threads} virtual thread(s) does not match numpy")
        row[f"wall_{threads}"] = time.perf_counter() - t0
        row[f"cycles_{threads}"] = net.cycles
        row[f"util_{threads}"] = sum(st.gemm_cycles for st in net.stats) / net.cycles
    return row


def report(name: str, row: dict[str, float]) -> str:
    cut = 1 - row["cycles_2"] / row["cycles_1"]
    return (f"{name:<28} {row['cycles_1']:>12,.0f} {row['cycles_2']:>12,.0f} {cut:>9.1%}   "
            f"{row['util_1']:>5.1%} -> {row['util_2']:>5.1%}   "
            f"{row['wall_1']:.2f} s / {row['wall_2']:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1024, help="GEMM size (n x n x n)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    results = {f"gemm {args.n}^3": run_gemm(args.n),
               f"gemm {args.n}^3, compiled": run_compiled(args.n),
               "conv2d 3x3 64->64 32x32 b8": run_conv(),
               "digits MLP (hetero), b360": run_mlp()}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'workload':<28} {'cycles 1 vt':>12} {'cycles 2 vt':>12} {'reduction':>9}   "
          f"{'utilization':<16} simulator wall time (1 vt / 2 vt)")
    for name, row in results.items():
        print(report(name, row))
    print(f"{'TVM paper, ResNet layers':<28} {'':>12} {'':>12} {'':>9}   "
          f"{PAPER[0]:>5.1%} -> {PAPER[1]:>5.1%}")


if __name__ == "__main__":
    main()
