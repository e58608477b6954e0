"""Trusted checks of a5_gpu_matmul: schedule a matmul for the GPU, graded in the simulator on
correctness, on the absence of races (and of uninitialised shared reads, out-of-range
indices, divergent barriers), and on the **performance model's predicted time**.

The student's schedule is exported as its trace (``sch.trace``), replayed on a fresh copy of
the matmul (``make_func``), built with ``target="cuda-sim"`` and run on inputs drawn here.
The speed grade replays the same trace at ``n = 1024`` and asks
:func:`mlc.target.cuda_sim.predict` for the kernel's time on the ``h100`` profile; the model
is deterministic, so the grade is the same on any machine and needs no GPU and no repeated
timing: ``ratio = reference time / student time``, full points from ``full`` (1.0: as fast
as the reference, the course's ``blocking_with_shared``), none at ``floor`` or slower,
linear in between.

Run as a script (what the grader does, in its own process)::

    python grader.py CASE_ID TRACE_FILE OUT_FILE
"""

from __future__ import annotations

import json
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from autograder.cases import replay_export

GPU = "h100"


def make_func(n: int) -> Any:
    """``C = A @ B``, float32, ``n x n``: what the student schedules."""
    from mlc import te

    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def reference_schedule(n: int) -> Any:
    """The course's ``blocking_with_shared`` (MLC course, GPU chapter): 8 x 8 threads, each a
    4 x 4 register tile, operands through shared memory 8 of k at a time, float4 copies."""
    from mlc import tir

    sch = tir.Schedule(make_func(n))
    c = sch.get_block("C")
    c_local = sch.cache_write(c, 0, "local")
    i, j, k = sch.get_loops(c)
    i0, i1, i2 = sch.split(i, [None, 8, 4])
    j0, j1, j2 = sch.split(j, [None, 8, 4])
    k0, k1 = sch.split(k, [None, 8])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.reverse_compute_at(c_local, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(sch.fuse(i1, j1), "threadIdx.x")
    for index in (0, 1):
        cache = sch.cache_read(c, index, "shared")
        sch.compute_at(cache, k0)
        a, b = sch.get_loops(cache)[-2:]
        _, t, v = sch.split(sch.fuse(a, b), [None, 64, 4])
        sch.vectorize(v)
        sch.bind(t, "threadIdx.x")
    sch.unroll(k1)
    sch.decompose_reduction(c, k0)
    return sch


def _inputs(case_id: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(case_id.encode()))
    return (rng.standard_normal((n, n)).astype(np.float32),
            rng.standard_normal((n, n)).astype(np.float32))


def _replay(trace_text: str, n: int) -> Any:
    from mlc import tir

    sch = tir.Schedule(make_func(n))
    tir.Trace.apply_json_to_schedule(json.loads(trace_text), sch)
    return sch


def _predict(sch: Any, n: int) -> float:
    import mlc
    from mlc.target import cuda_sim

    zeros = [np.zeros((n, n), np.float32) for _ in range(3)]
    return cuda_sim.predict(mlc.lower(sch.mod, target="cuda-sim"), *zeros, gpu=GPU).time


@dataclass
class GPUCase:
    """A schedule replayed from its trace and graded on one of: ``"correct"`` (matches numpy
    in cuda-sim), ``"checked"`` (the checker finds nothing), ``"speed"`` (predicted time)."""

    id: str
    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    floor: float = 0.25
    full: float = 1.0
    show_message: ClassVar[bool] = True

    def evaluate(self, trace_text: str) -> dict[str, Any]:
        """Replay, build, run and judge (trusted: runs in the grader's process)."""
        import mlc
        from mlc.target import cuda_sim

        n = self.params["n"]
        a, b = _inputs(self.id, n)
        try:
            sch = _replay(trace_text, n)
            f = mlc.build(sch.mod, target="cuda-sim")
            c = np.full((n, n), np.nan, np.float32)
            if self.kind == "checked":
                report = cuda_sim.check(f, a, b, c)
                return {"ok": True, "message": str(report)}
            f.check_on_first_call = False     # races are the "checked" case's business
            f(a, b, c)
        except Exception as err:  # a student's schedule may fail in any way: report it
            return {"ok": False, "message": f"{type(err).__name__}: {err}"}
        expected = a @ b
        if not np.allclose(c, expected, rtol=1e-4, atol=1e-3):
            bad = int((~np.isclose(c, expected, rtol=1e-4, atol=1e-3)).sum())
            return {"ok": False, "message": f"{bad} of {c.size} values differ from numpy's A @ B"}
        if self.kind == "correct":
            return {"ok": True, "message": "matches numpy in cuda-sim"}
        big = self.params["speed_n"]
        try:
            time = _predict(_replay(trace_text, big), big)
        except Exception as err:  # noqa: BLE001
            return {"ok": False, "message": f"the schedule replayed at n = {big} fails: "
                                            f"{type(err).__name__}: {err}"}
        ref = _predict(reference_schedule(big), big)
        return {"ok": True, "message": "matches numpy", "time": time, "ref_time": ref,
                "ratio": ref / time}

    def score(self, ratio: float) -> float:
        return float(np.clip((ratio - self.floor) / (self.full - self.floor), 0.0, 1.0))

    def _grade(self, report: dict[str, Any]) -> tuple[float, str]:
        if not report["ok"]:
            return 0.0, report["message"]
        if self.kind != "speed":
            return 1.0, report["message"]
        fraction = self.score(report["ratio"])
        return fraction, (
            f"correct; predicted {report['time'] * 1e6:.1f} us on the {GPU} profile at n = "
            f"{self.params['speed_n']}, the reference {report['ref_time'] * 1e6:.1f} us "
            f"({report['ratio']:.2f}x its speed); scale: 0% at {self.floor:g}x or slower, 100% "
            f"from {self.full:g}x: {fraction:.0%} of the points")

    def check_local(self, value: Any) -> tuple[float, str]:
        return self._grade(self.evaluate(str(value)))

    def check_export(self, exports: Path, *, grader_path: Path, run_trusted: Any,
                     workdir: Path, **_: Any) -> tuple[float, str]:
        report, why = replay_export(
            self.id, exports, workdir, run_trusted,
            lambda trace, out: [sys.executable, str(grader_path), self.id, str(trace), str(out)])
        return self._grade(report) if report is not None else (0.0, why)


CASES = [
    GPUCase("gpu_mm_correct", "correct", params={"n": 128}),
    GPUCase("gpu_mm_checked", "checked", params={"n": 128}),
    GPUCase("gpu_mm_speed", "speed", params={"n": 128, "speed_n": 1024}),
]


def main(argv: list[str]) -> None:
    case_id, trace_file, out_file = argv
    case = next(c for c in CASES if c.id == case_id)
    report = case.evaluate(Path(trace_file).read_text())
    Path(out_file).write_text(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1:])
