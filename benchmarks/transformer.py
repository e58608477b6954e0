"""A transformer encoder block, mlc vs ONNX Runtime (issue 30).

    python benchmarks/transformer.py [--rounds 9] [--threads 2] [--seq 128] [--width 256]
                                     [--heads 4] [--profile]

One pre-norm block (mlc.graph.frontend.onnx_examples.transformer): LayerNormalization, Q/K/V
MatMul + Add, 4-d attention (MatMul, scale, Softmax, MatMul), output projection, residual,
LayerNormalization, MLP 4x with Gelu (erf), residual; imported from ONNX and timed against
ONNX Runtime on the same model as benchmarks/vs_ort.py describes. ``--profile`` also prints
each fused kernel's time (compiled alone, median of 5 batches, on the run's clock).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vs_ort  # noqa: E402

THREADS = vs_ort.setup_from_argv(sys.argv)  # before mlc loads its OpenMP runtime


def profile(model: object) -> None:
    """Each group compiled alone and timed on its real inputs."""
    from mlc import graph
    from mlc.graph.module import _value

    mod = graph.build(graph.optimize(graph.from_onnx(model)), target="llvm")
    dims = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)  # type: ignore[attr-defined]
    x = np.random.default_rng(0).standard_normal(dims).astype("float32")
    values = {v: x for v in mod.graph.inputs}
    print("\n| kernel | output | us (median of 5) |\n|---|---|---|")
    total = 0.0
    for k in mod.kernels:
        args = [_value(a, values) for a in k.inputs]
        out = np.empty(k.group.root.shape, k.group.root.dtype)
        fn = k.fn
        fn(*args, out)
        ts = []
        for _ in range(5):
            t0 = vs_ort.CLOCK()
            for _ in range(10):
                fn(*args, out)
            ts.append((vs_ort.CLOCK() - t0) / 10 * 1e6)
        values[k.group.root] = out
        total += float(np.median(ts))
        print(f"| {k.name} | {k.group.root.shape} | {np.median(ts):.1f} |")
    print(f"| sum | | {total:.1f} |  (load average {vs_ort.load()})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: one thread each, timed by this thread's CPU time")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    from mlc.graph.frontend import onnx_examples

    model = onnx_examples.transformer(args.seq, args.width, args.heads)
    print(vs_ort.header(THREADS, args.rounds))
    r = vs_ort.compare(f"encoder block seq {args.seq}, width {args.width}, {args.heads} heads",
                       model, THREADS, args.rounds, 10)
    print(vs_ort.row(r), flush=True)
    if args.profile:
        profile(model)


if __name__ == "__main__":
    main()
