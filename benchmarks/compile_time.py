"""How long lowering, code generation and JIT take for the GEMM journey's kernels.

    python benchmarks/compile_time.py [--size 1024] [--repeat 5] [--steps a,b]

Each kernel is compiled ``--repeat`` times; the table shows the median of each phase, timed
one by one as ``mlc.build`` runs them (mlc/target/llvm/build.py: compile_lowered):

    lower     the pass list of mlc/transform (check_bounds ... simplify)
    llvm_ir   mlc's code generator: the lowered loops -> LLVM IR text
    parse     LLVM parses and verifies that text
    opt       LLVM's -O3 module pipeline (loop and SLP vectorizers, unrolling)
    jit       MCJIT: a target machine, instruction selection, register allocation, linking
    build     one whole ``mlc.build`` call (the sum, plus checks and bookkeeping)

and the load average beside it, since on a shared machine every phase stretches.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm import STEPS  # noqa: E402

import mlc  # noqa: E402
from mlc import config  # noqa: E402
from mlc.runtime import jit  # noqa: E402
from mlc.target.llvm.codegen import codegen_llvm  # noqa: E402
from mlc.target.llvm.dot import cpu_features  # noqa: E402
from mlc.target.target import parse_target  # noqa: E402
from mlc.transform.pipeline import lower  # noqa: E402

PHASES = ("lower", "llvm_ir", "parse", "opt", "jit", "build")


def phases(func: Any) -> dict[str, float]:
    """Seconds of each phase of one compile of ``func`` (see the module docstring)."""
    import llvmlite.binding as llvm

    tgt = parse_target("llvm")
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    low = lower(func)
    out["lower"] = time.perf_counter() - t0
    tm = jit.machine_for(tgt)
    t0 = time.perf_counter()
    src = codegen_llvm(low, None, parallel_runtime=True, num_threads=config.num_threads(),
                       triple=tm.triple, data_layout=str(tm.target_data),
                       bounds_check=config.bounds_check(), cpu_features=cpu_features(tgt))
    out["llvm_ir"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    mod = jit.parse(src.ir)
    mod.triple, mod.data_layout = tm.triple, str(tm.target_data)
    out["parse"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    jit.optimize(mod, tm)
    out["opt"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    engine = llvm.create_mcjit_compiler(mod, jit.new_target_machine(tgt.mcpu, tgt.mattr))
    engine.finalize_object()
    out["jit"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    mlc.build(func, target="llvm")
    out["build"] = time.perf_counter() - t0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", default=",".join(STEPS))
    args = parser.parse_args()
    print(f"compile time of the GEMM journey's kernels ({args.size}^3), median of "
          f"{args.repeat}, ms; 'parallel+unroll' is the TVM tutorial's final schedule\n")
    print("| step | " + " | ".join(PHASES) + " | load avg |\n|---" * 1 + "|---" * (
        len(PHASES) + 1) + "|")
    for name in args.steps.split(","):
        func = STEPS[name](args.size)
        phases(func)  # warm: LLVM's one-time initialisation is not the kernel's
        runs = [phases(func) for _ in range(args.repeat)]
        cells = " | ".join(f"{statistics.median(r[p] for r in runs) * 1e3:.1f}" for p in PHASES)
        load = "/".join(f"{v:.1f}" for v in os.getloadavg())
        print(f"| {name} | {cells} | {load} |", flush=True)


if __name__ == "__main__":
    main()
