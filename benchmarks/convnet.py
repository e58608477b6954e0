"""A small CNN, mlc vs ONNX Runtime (issue 30); and the digits conv net fused vs unfused
(``--fusion``).

    python benchmarks/convnet.py [--rounds 9] [--threads 2] [--batch 1]
    python benchmarks/convnet.py --fusion [--batch 16] [--rounds 5] [--json]

Default: two conv3x3 + BatchNormalization + Relu + MaxPool stages and a dense layer on
1x3x32x32 (mlc.graph.frontend.onnx_examples.convnet), imported from ONNX, against ONNX
Runtime on the same model, timed as benchmarks/vs_ort.py describes.

``--fusion``: the digits conv net fused (graph.optimize level 2) vs unfused (level 0, one
kernel per op) vs numpy (the ops' numpy reference implementations), interleaved in one run.
Fused and unfused are each ONE native call per inference (every kernel linked into one
function), so the difference is fusion itself: fewer passes over memory, fewer intermediates.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vs_ort  # noqa: E402

# before mlc loads its OpenMP runtime
THREADS = vs_ort.setup_from_argv(sys.argv) if "--fusion" not in sys.argv else 0

from mlc import graph  # noqa: E402
from mlc.examples.mlp import convnet_graph  # noqa: E402


def per_call(fn: Callable[[], object], number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: one thread each, timed by this thread's CPU time")
    ap.add_argument("--fusion", action="store_true", help="the digits conv net, fused vs not")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not args.fusion:
        from mlc.graph.frontend import onnx_examples

        rounds, batch = args.rounds or 9, args.batch or 1
        print(vs_ort.header(THREADS, rounds))
        r = vs_ort.compare(f"CNN 2x(conv3x3+BN+ReLU+pool)+dense, {batch}x3x32x32",
                           onnx_examples.convnet(batch), THREADS, rounds, 200)
        print(vs_ort.row(r))
        return
    args.batch, args.rounds = args.batch or 16, args.rounds or 5
    g, _ = convnet_graph(args.batch)
    x = np.random.default_rng(0).random((args.batch, 1, 8, 8)).astype("float32")
    fused = graph.build(graph.optimize(g, level=2))
    unfused = graph.build(graph.optimize(g, level=0))
    ref = graph.evaluate(g, x=x)[0]
    for m in (fused, unfused):
        np.testing.assert_allclose(m(x=x)[0], ref, rtol=1e-4, atol=1e-5)
    contenders: dict[str, Callable[[], object]] = {
        "fused": fused.run, "unfused": unfused.run, "numpy": lambda: graph.evaluate(g, x=x)}
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(args.rounds):
        for k, fn in contenders.items():
            times[k].append(per_call(fn, 20))
    med = {k: float(np.median(v)) * 1e6 for k, v in times.items()}
    row = {"batch": args.batch, "fused_kernels": len(fused.kernels),
           "unfused_kernels": len(unfused.kernels), **{f"{k}_us": v for k, v in med.items()},
           "unfused/fused": med["unfused"] / med["fused"],
           "numpy/fused": med["numpy"] / med["fused"],
           "memory_bytes_fused": fused.graph.memory.bytes_after if fused.graph.memory else None,
           "memory_bytes_unfused": unfused.graph.memory.bytes_after
           if unfused.graph.memory else None}
    if args.json:
        print(json.dumps(row, indent=1))
        return
    print(f"conv net, batch {args.batch}: fused {med['fused']:.1f} us "
          f"({len(fused.kernels)} kernels), unfused {med['unfused']:.1f} us "
          f"({len(unfused.kernels)} kernels), numpy {med['numpy']:.1f} us")
    print(f"  fusion speed-up {row['unfused/fused']:.2f}x, vs numpy {row['numpy/fused']:.2f}x; "
          f"intermediate memory {row['memory_bytes_unfused']} -> {row['memory_bytes_fused']} bytes")


if __name__ == "__main__":
    main()
