"""Trusted checks of a5_gpu_matmul: schedule a matmul for the GPU, graded in the simulator on
correctness, on the absence of races (and of uninitialised shared reads, out-of-range
indices, divergent barriers), and on the **performance model's predicted time**.

The student's schedule is exported as its trace (``sch.trace``), replayed on a fresh copy of
the matmul (``make_func``), built with ``target="cuda-sim"`` and run on inputs drawn here.
The replay, build, run and prediction happen in a judged step (:mod:`autograder.judge_gpu`:
its own uid, no capability, no tests folder, ``allow_calls=False``); this process keeps the
expected answer and the reference's predicted time, and decides.
The speed grade replays the same trace at ``n = 1024`` and asks
:func:`mlc.target.cuda_sim.predict` for the kernel's time on the ``h100`` profile; the model
is deterministic, so the grade is the same on any machine and needs no GPU and no repeated
timing: ``ratio = reference time / student time``, full points from ``full`` (1.0: as fast
as the reference, the course's ``blocking_with_shared``), none at ``floor`` or slower,
linear in between.

Run as a script (what the grader does, in its trusted runner)::

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

from autograder.cases import linear_credit, replay_export

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

    def evaluate(self, trace_text: str, workdir: Path | None = None,
                 hide: list[str] | None = None,
                 probe: dict[str, Any] | None = None) -> dict[str, Any]:
        """Replay, build, run and judge. With ``workdir`` (the grader) the student's schedule
        is replayed, built (``allow_calls=False``) and run in a judged step
        (:func:`autograder.judge_gpu.judge_schedule`: own uid, no capability, no tests
        folder); without (a student's own check, in the notebook) in this process. The
        expected answer and the reference's predicted time are computed here either way."""
        from autograder import judge_gpu

        n = self.params["n"]
        big = self.params["speed_n"] if self.kind == "speed" else None
        a, b = _inputs(self.id, n)
        options: dict[str, Any] = {"check": self.kind == "checked", "gpu": GPU,
                                   "predict_func": make_func(big) if big else None}
        if workdir is None:
            run = judge_gpu.run_schedule("cuda-sim", make_func(n), trace_text, [a, b], (n, n),
                                         "float32", **options)
        else:
            run = judge_gpu.judge_schedule("cuda-sim", make_func(n), trace_text,
                                           {"A": a, "B": b}, (n, n), "float32", workdir,
                                           hide=hide, probe=probe, **options)
        report = self._report(run, a, b)
        if probe is not None:
            report["probe"] = run.probe
        return report

    def _report(self, run: Any, a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
        """The verdict on what the replayed schedule did (:class:`~autograder.judge_gpu.
        ScheduleRun`, already checked: shape, dtype, a finite positive time)."""
        if not run.ran:
            return {"ok": False, "message": run.message}
        if self.kind == "checked":
            return {"ok": True, "message": run.message}
        c, expected = run.out, a @ b
        if not np.allclose(c, expected, rtol=1e-4, atol=1e-3):
            bad = int((~np.isclose(c, expected, rtol=1e-4, atol=1e-3)).sum())
            return {"ok": False, "message": f"{bad} of {c.size} values differ from numpy's A @ B"}
        if self.kind == "correct":
            return {"ok": True, "message": "matches numpy in cuda-sim"}
        big = self.params["speed_n"]
        if run.predict_error or run.time is None:
            return {"ok": False, "message": f"the schedule replayed at n = {big} fails: "
                                            f"{run.predict_error}"}
        ref = _predict(reference_schedule(big), big)
        return {"ok": True, "message": "matches numpy", "time": run.time, "ref_time": ref,
                "ratio": ref / run.time}

    def score(self, ratio: float) -> float:
        return linear_credit(ratio, self.floor, self.full)

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


def main(argv: list[str]) -> int:
    """What the grader runs (its trusted runner): the student's schedule is judged on the
    other side of the wall; a judged step that cannot start with every wall is a
    ``GRADER-ERROR`` (exit 3), never a grade."""
    from autograder.judged import JudgeUnavailable, grader_error

    case_id, trace_file, out_file = argv
    case = next(c for c in CASES if c.id == case_id)
    tests = Path(__file__).resolve().parent
    try:
        report = case.evaluate(Path(trace_file).read_text(), Path(out_file).resolve().parent,
                               hide=[str(tests), str(tests.parent)])
    except JudgeUnavailable as err:
        return grader_error(err)
    Path(out_file).write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
