"""How long lowering, code generation and JIT take for the GEMM journey's kernels.

    python benchmarks/compile_time.py [--size 1024] [--repeat 5]

Each kernel is compiled ``--repeat`` times; the table shows the median of each phase:
lowering (the pass list in mlc/transform), LLVM IR generation, and LLVM optimisation + JIT.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm import STEPS  # noqa: E402

import mlc  # noqa: E402
from mlc.transform.pipeline import lower  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"compile time of the GEMM journey's kernels ({args.size}^3), median of {args.repeat}")
    print(f"{'step':<18}{'lower':>9}{'build':>9}  (build = lower + codegen + LLVM -O3 + JIT)")
    for name, make in STEPS.items():
        func = make(args.size)
        lowers, builds = [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            lower(func)
            lowers.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            mlc.build(func, target="llvm")
            builds.append(time.perf_counter() - t0)
        print(f"{name:<18}{statistics.median(lowers) * 1e3:>7.0f}ms"
              f"{statistics.median(builds) * 1e3:>7.0f}ms")


if __name__ == "__main__":
    main()
