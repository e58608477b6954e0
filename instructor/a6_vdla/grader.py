"""Trusted checks of a6_vdla: schedule an int8 GEMM for the VDLA accelerator, graded on
correctness and on **simulated cycles**.

The student's te schedule is exported as its trace (``s.sch.trace``), replayed on a fresh
copy of the GEMM (``make_func``), built with ``target="vdla"`` and run on the simulator with
inputs drawn here. The replay, build and simulation happen in a judged step
(:mod:`autograder.judge_gpu`: its own uid, no capability, no tests folder; VDLA programs are
instructions its simulator interprets, so nothing native runs); this process keeps the
expected answer and the reference's cycles, and decides. Cycles are deterministic, so the
speed grade is the same on any machine and needs no repeated timing: ``ratio = reference
cycles / student cycles``, full points from ``full`` (1.0: as fast as the reference), none at
``floor`` or slower, linear in between.

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


def make_func(n: int) -> Any:
    from mlc import te
    from mlc.vdla.schedules import gemm_compute

    A, B, C = gemm_compute(n, n, n)
    return te.create_prim_func([A, B, C])


def reference_schedule(n: int) -> tuple[Any, list[Any]]:
    """Blocks of 64 x 64, 64 columns of K a step, one virtual thread."""
    from mlc.vdla.schedules import gemm_schedule

    return gemm_schedule(n, n, n, block=64, kblock=64, threads=1)


def _inputs(case_id: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(case_id.encode()))
    a = rng.integers(-128, 128, (n, n), dtype=np.int8)
    b = rng.integers(-128, 128, (n, n), dtype=np.int8)
    return a, b


def _run(module: Any, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    c = np.zeros((a.shape[0], b.shape[0]), np.int32)
    stats = module(a, b, c)
    return c, stats.cycles


@dataclass
class CycleCase:
    """A schedule replayed from its trace, checked against numpy and graded on cycles."""

    id: str
    params: dict[str, Any] = field(default_factory=dict)
    cycles: bool = True
    floor: float = 0.4
    full: float = 1.0
    show_message: ClassVar[bool] = True

    def evaluate(self, trace_text: str, workdir: Path | None = None,
                 hide: list[str] | None = None,
                 probe: dict[str, Any] | None = None) -> dict[str, Any]:
        """Replay, build, run and compare. With ``workdir`` (the grader) the student's
        schedule is replayed, built and run on the simulator in a judged step
        (:func:`autograder.judge_gpu.judge_schedule`: own uid, no capability, no tests
        folder); without (a student's own check, in the notebook) in this process. The
        expected answer and the reference's cycles are computed here either way."""
        import mlc
        from autograder import judge_gpu

        n = self.params["n"]
        a, b = _inputs(self.id, n)
        expected = a.astype(np.int32) @ b.astype(np.int32).T
        if workdir is None:
            run = judge_gpu.run_schedule("vdla", make_func(n), trace_text, [a, b],
                                         expected.shape, "int32")
        else:
            run = judge_gpu.judge_schedule("vdla", make_func(n), trace_text, {"A": a, "B": b},
                                           expected.shape, "int32", workdir, hide=hide,
                                           probe=probe)
        report = self._report(run, expected)
        if probe is not None:
            report["probe"] = run.probe
        if report["correct"]:
            s, args = reference_schedule(n)
            _, ref_cycles = _run(mlc.build(s, args, target="vdla"), a, b)
            report.update(ref_cycles=ref_cycles, ratio=ref_cycles / report["cycles"])
        return report

    @staticmethod
    def _report(run: Any, expected: np.ndarray) -> dict[str, Any]:
        """The verdict on what the replayed schedule did (:class:`~autograder.judge_gpu.
        ScheduleRun`, already checked: shape, dtype, a positive whole number of cycles)."""
        if not run.ran:
            return {"correct": False, "message": run.message}
        got = run.out
        if not np.array_equal(got, expected):
            bad = int((got != expected).sum())
            return {"correct": False, "message": f"{bad} of {got.size} values differ from "
                                                 "numpy's A @ B.T"}
        return {"correct": True, "message": "matches numpy", "cycles": run.cycles}

    def score(self, ratio: float) -> float:
        return linear_credit(ratio, self.floor, self.full)

    def _grade(self, report: dict[str, Any]) -> tuple[float, str]:
        if not report["correct"]:
            return 0.0, report["message"]
        if not self.cycles:
            return 1.0, report["message"]
        fraction = self.score(report["ratio"])
        return fraction, (
            f"correct; {report['cycles']:,} simulated cycles against the reference's "
            f"{report['ref_cycles']:,} ({report['ratio']:.2f}x its speed); scale: 0% at "
            f"{self.floor:g}x or slower, 100% from {self.full:g}x: {fraction:.0%} of the points")

    def check_local(self, value: Any) -> tuple[float, str]:
        return self._grade(self.evaluate(str(value)))

    def check_export(self, exports: Path, *, grader_path: Path, run_trusted: Any,
                     workdir: Path, **_: Any) -> tuple[float, str]:
        report, why = replay_export(
            self.id, exports, workdir, run_trusted,
            lambda trace, out: [sys.executable, str(grader_path), self.id, str(trace), str(out)])
        return self._grade(report) if report is not None else (0.0, why)


CASES = [
    CycleCase("vdla_gemm_correct", params={"n": 256}, cycles=False),
    CycleCase("vdla_gemm_cycles", params={"n": 256}, cycles=True),
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
