"""How long cuda-sim takes on the GPU chapter's kernels: the checked first call, the plain
simulated call, a full check, the performance model's count; before and after a change.

    python benchmarks/cuda_sim_speed.py [--old /tmp/h5_old] [--out results.md] [--cap 90]

Each measurement runs in its own process (``--worker``), on this checkout and, with
``--old``, on another checkout of mlc (``git worktree add /tmp/h5_old <commit>``), and
reports CPU seconds (``time.process_time``: what the work costs, steady on a shared
machine) and wall seconds. A measurement still running after ``--cap`` seconds is stopped
and shown as ``> cap``. The kernels:

* ``course 8x8x8x8x4``: the MLC course's ``blocking_with_shared(sch, 8, 8, 8, 8, 4)`` (8x8
  register tile per thread, 64 threads, tiles of k = 4 through shared memory) at 256^3;
* ``course 4x4x8x8x8``: the same with a 4x4 register tile (64 blocks);
* ``shared 16``: notebook 08's ``shared_matmul(256, 16)`` (one element per thread, 256 blocks
  of 16x16 threads);
* ``register``: notebook 08's ``register_matmul(256)`` (4x4 per thread, float4 copies);
* ``long loop``: 64 threads each adding 1,000,000 numbers (a loop carried from iteration to
  iteration: it cannot run at once; the check is bounded by its budget);
* ``model``: ``cuda_sim.count`` of benchmarks/gpu_model.py's kernels at 1024^3.

Targets (issue 30): the course's matmul at 256^3 checked on its first call (every block,
every access) in <= 3 s, the plain call in <= 0.2 s, a 1024^3 count in <= 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

MATMULS = ["course 8x8x8x8x4", "course 4x4x8x8x8", "shared 16", "register"]
MODEL_KERNELS = ["naive", "shared 16", "register", "gemm (8, 16, 8, 8, 8, 4)",
                 "gemm (16, 16, 4, 4, 16, 4)"]


# -- the kernels (written with the API both old and new checkouts have) ---------------------

def _matmul(n: int, names: tuple[str, str, str] = ("A", "B", "C")) -> Any:
    from mlc import te

    A = te.placeholder((n, n), name=names[0])
    B = te.placeholder((n, n), name=names[1])
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name=names[2])
    return te.create_prim_func([A, B, C])


def course(n: int, ly: int, lx: int, by: int, bx: int, tk: int) -> Any:
    """The MLC course's ``blocking_with_shared`` (chapter "GPU and hardware acceleration")."""
    from mlc import tir

    sch = tir.Schedule(_matmul(n))
    block_c = sch.get_block("C")
    c_local = sch.cache_write(block_c, 0, "local")
    i, j, k = sch.get_loops(block=block_c)
    i0, i1, i2 = sch.split(loop=i, factors=[None, by, ly])
    j0, j1, j2 = sch.split(loop=j, factors=[None, bx, lx])
    k0, k1 = sch.split(loop=k, factors=[None, tk])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.reverse_compute_at(c_local, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(sch.fuse(i1, j1), "threadIdx.x")
    for index in (0, 1):
        cache = sch.cache_read(block=block_c, read_buffer_index=index, storage_scope="shared")
        sch.compute_at(block=cache, loop=k0)
        a, b = sch.get_loops(block=cache)[-2:]
        _, tx, vec = sch.split(loop=sch.fuse(a, b), factors=[None, by * bx, 4])
        sch.vectorize(vec)
        sch.bind(tx, "threadIdx.x")
    sch.decompose_reduction(block_c, k0)
    return sch.mod


def _schedule(case: str, n: int) -> Any:
    sys.path.insert(0, str(HERE))
    import gpu_model

    if case.startswith("course"):
        ly, lx, by, bx, tk = (int(x) for x in case.split()[1].split("x"))
        return course(n, ly, lx, by, bx, tk)
    if case == "shared 16":
        return gpu_model.shared_matmul(n, 16).mod
    if case == "register":
        return gpu_model.register_matmul(n).mod
    if case == "naive":
        return gpu_model.naive_matmul(n).mod
    if case.startswith("gemm"):
        config = tuple(int(x) for x in case[6:-1].split(","))
        return gpu_model.gemm(config)(n).mod
    raise SystemExit(f"unknown kernel {case!r}")


LONG_LOOP = """
@T.prim_func
def f(A: T.Buffer((1000000,), "float32"), B: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            B[bx * 32 + tx] = T.float32(0)
            for i in range(1000000):
                B[bx * 32 + tx] = B[bx * 32 + tx] + A[i]
"""


def _timed(fn: Any) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def worker(kind: str, case: str) -> dict[str, Any]:
    """One measurement, in this process, on whichever mlc is on sys.path."""
    import warnings

    import mlc

    warnings.simplefilter("ignore")
    out: dict[str, Any] = {"mlc": str(Path(mlc.__file__).parent.parent)}
    rng = np.random.default_rng(0)
    if kind == "matmul":
        n = 256
        f = mlc.build(_schedule(case, n), target="cuda-sim")
        a, b = rng.random((n, n), dtype="float32"), rng.random((n, n), dtype="float32")
        c = np.zeros((n, n), "float32")
        out["first call"] = _timed(lambda: f(a, b, c))
        out["plain call"] = _timed(lambda: f(a, b, c))
        np.testing.assert_allclose(c, a @ b, rtol=1e-4)
        report = getattr(f, "last_check", None)
        out["first call checked"] = repr(report) if report is not None else \
            "old: 16 sampled blocks per kernel (with neighbours)"
        out["check every block"] = _timed(lambda: f.check(a, b, np.zeros_like(c)))
    elif kind == "long":
        from mlc.script import from_source

        f = mlc.build(from_source(textwrap.dedent(LONG_LOOP)), target="cuda-sim")
        a, b = np.ones(1_000_000, "float32"), np.zeros(64, "float32")
        out["first call"] = _timed(lambda: f(a, b))
        report = getattr(f, "last_check", None)
        out["first call checked"] = repr(report) if report is not None else "old"
    elif kind == "model":
        from mlc.target.cuda_sim.model import count

        n = 1024
        prog = mlc.lower(_schedule(case, n), target="cuda-sim")
        arrays = [np.zeros((n, n), "float32") for _ in range(3)]
        out["count"] = _timed(lambda: count(prog, *arrays))
    return out


# -- the driver ----------------------------------------------------------------------------------

def measure(root: Path, kind: str, case: str, cap: float) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(root))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, case]
    try:
        done = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True,
                              timeout=cap)
    except subprocess.TimeoutExpired:
        return {"stopped": cap}
    if done.returncode != 0:
        return {"failed": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cell(result: dict[str, Any], key: str) -> str:
    if "stopped" in result:
        return f"> {result['stopped']:.0f} s (stopped)"
    if "failed" in result:
        return "failed: " + " ".join(result["failed"])[:60]
    if key not in result:
        return "-"
    cpu, wall = result[key]
    return f"{cpu:.2f} s ({wall:.2f} wall)"


def machine() -> str:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                      if line.startswith("Model name")), platform.processor())
        cpus = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                     if line.startswith("CPU(s)")), "?")
    except OSError:
        model, cpus = platform.processor(), "?"
    return f"{model}, {cpus} vCPU"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--old", type=Path, help="another mlc checkout to compare with")
    p.add_argument("--out", type=Path, help="write the table (markdown) here")
    p.add_argument("--cap", type=float, default=90.0, help="seconds per measurement")
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return
    sides = [("new", ROOT)] + ([("old", args.old)] if args.old else [])
    load_before = os.getloadavg()
    rows: list[str] = []
    notes: list[str] = []

    def row(what: str, results: dict[str, dict[str, Any]], key: str) -> None:
        cells = [_cell(results[s], key) for s, _ in sides]
        line = f"| {what} | " + " | ".join(cells) + " |"
        rows.append(line)
        print(line, flush=True)

    header = "| kernel, measurement | " + " | ".join(
        f"{s} (CPU s, wall)" for s, _ in sides) + " |"
    print(header)
    rows.append(header)
    rows.append("|---|" + "---|" * len(sides))
    for case in MATMULS:
        results = {s: measure(root, "matmul", case, args.cap) for s, root in sides}
        row(f"{case} 256^3: first call (checked)", results, "first call")
        row(f"{case} 256^3: plain simulated call", results, "plain call")
        row(f"{case} 256^3: f.check, every block", results, "check every block")
        if "first call checked" in results["new"]:
            notes.append(f"{case}: the new first call checked: "
                         f"{results['new']['first call checked']}")
    results = {s: measure(root, "long", "-", args.cap) for s, root in sides}
    row("long loop (64 threads x 1,000,000 iterations): first call", results, "first call")
    if "first call checked" in results["new"]:
        notes.append(f"long loop: {results['new']['first call checked']}")
    for case in MODEL_KERNELS:
        results = {s: measure(root, "model", case, args.cap) for s, root in sides}
        row(f"model: count of {case} at 1024^3", results, "count")
    load_after = os.getloadavg()
    head = (f"# benchmarks/cuda_sim_speed.py ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
            f", {machine()}; load average {load_before[0]:.1f} before, {load_after[0]:.1f} "
            f"after: the machine is shared, so CPU seconds are the figure to compare, wall "
            f"seconds include waiting for a CPU)")
    text = "\n".join([head, "", *rows, "", *(f"- {n}" for n in notes)]) + "\n"
    print("\n".join(f"- {n}" for n in notes))
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
