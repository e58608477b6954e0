"""Replay and time a student's schedule trace on the student's side of the wall.

A trace is data, but replaying it builds and runs a program the student shaped (and a trace
primitive that misbehaves on hostile values runs in the replaying process), so the replay
belongs on the same side as the notebook. The halves:

* trusted (:func:`judge_trace`, in the grader's process that loaded ``grader.py``): the
  reference computation is printed as TVMScript, the reference schedule as its trace, the
  inputs are drawn and the expected answer computed; all of it but the answer is handed to
* the judged step (``python -m autograder.judge_trace --judge in out``, started by
  :func:`autograder.judged.run_judged`: own uid, no capability, seccomp, no tests folder),
  which parses the computation, applies the student's trace, builds it with
  ``allow_calls=False``, runs it and writes the output; for a speed case it also rebuilds
  the reference from its trace and times both (:func:`autograder.replay.time_interleaved`,
  on one CPU when :func:`autograder.replay.one_cpu` exists) and writes the raw times.

The trusted side compares the output with the answer and checks the times it reads back
(numbers, positive, finite, as many as asked); deciding the credit from them
(``TraceCase.score``) stays with the caller (:mod:`autograder.replay`).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from autograder.cases import TraceCase, compare, linear_credit

MAX_MESSAGE = 2000


def judge_trace(case: TraceCase, trace_text: str, workdir: Path,
                hide: list[str] | None = None, rounds: int = 10, min_time: float = 0.02,
                settle: float = 0.02, probe: dict[str, Any] | None = None) -> dict[str, Any]:
    """Replay ``trace_text`` for ``case`` in a judged step; the report of
    :func:`autograder.replay.replay_and_time` before its decision: ``correct``, ``message``
    and, for a speed case, the judged step's timing (``t_reference_rounds``,
    ``t_student_rounds`` and what :func:`autograder.replay.summarize` makes of them).
    Raises :class:`~autograder.judged.JudgeUnavailable` when the step could not judge
    (never a grade)."""
    from autograder.judged import JudgeUnavailable, pack_arrays, read_npy, run_judged
    from mlc import tir

    params = case.effective_params()
    arrays = case.make_inputs()
    expected = np.asarray(case.reference(*arrays.values(), **params))
    func = case.make_func(**params)
    ref_sch = tir.Schedule(func)
    case.reference_schedule(ref_sch)
    ref_trace = ref_sch.trace.as_json()
    spec = {"names": list(arrays), "out_shape": list(expected.shape),
            "out_dtype": str(expected.dtype), "speed": bool(case.speed), "rounds": rounds,
            "min_time": min_time, "settle": settle, "give_up_below": case.floor / 2,
            "floor": case.floor, "full": case.full,
            "undecided_above": case.undecided_above, "probe": probe}
    judged = run_judged(
        "autograder.judge_trace", workdir,
        {"func.txt": func.script().encode(), "trace.json": trace_text.encode(),
         "reference_trace.json": (ref_trace if isinstance(ref_trace, str)
                                  else json.dumps(ref_trace)).encode(),
         "inputs.npz": pack_arrays(arrays), "spec.json": json.dumps(spec).encode()},
        outputs=("out.npy",), hide=hide, wall_s=200.0,
        cap=max(1 << 20, 2 * expected.nbytes + 4096))
    if judged.problem:
        raise JudgeUnavailable(judged.problem)
    if judged.failure:
        return {"correct": False, "message": f"the schedule could not be checked: "
                                              f"{judged.failure}"}
    result = judged.result or {}
    report: dict[str, Any] = {"probe": result.get("probe")} if probe is not None else {}
    if not result.get("ran"):
        report.update(correct=False, message=str(result.get("message", ""))[:MAX_MESSAGE]
                      or "the schedule does not replay")
        return report
    out = read_npy(judged.files.get("out.npy"), expected.shape, expected.dtype)
    if isinstance(out, str):
        return {**report, "correct": False, "message": f"wrong result: the output {out}"}
    ok, message = compare(expected, out, case.rtol, case.atol)
    if not ok:
        return {**report, "correct": False, "message": f"wrong result: {message}"}
    report.update(correct=True, message="correct")
    if case.speed:
        timing = _checked_timing(result.get("timing"), rounds)
        if timing is None:
            raise JudgeUnavailable("the judged replay reported no usable timing")
        report.update(timing)
    return report


def _checked_timing(timing: Any, rounds: int) -> dict[str, Any] | None:
    """The raw times the judged step reported, if they are what was asked for (numbers,
    positive, finite, as many for each side, at most the rounds of a batch and its retiming),
    summarized and decided here (:func:`autograder.replay.summarize`, ``decide``); None
    otherwise."""
    if not isinstance(timing, dict):
        return None
    t_ref, t_stu = timing.get("t_reference_rounds"), timing.get("t_student_rounds")
    if not (isinstance(t_ref, list) and isinstance(t_stu, list)):
        return None
    ok = (len(t_ref) == len(t_stu) and 1 <= len(t_ref) <= 3 * max(5, rounds)
          and all(isinstance(t, float) and math.isfinite(t) and t > 0 for t in t_ref + t_stu))
    if not ok:
        return None
    from autograder.replay import summarize

    return {**summarize(t_ref, t_stu), "retimed": bool(timing.get("retimed"))}


def decide_report(case: TraceCase, report: dict[str, Any]) -> dict[str, Any]:
    """``report`` (from :func:`judge_trace`) with the speed decision of
    :func:`autograder.replay.decide` made here, on the trusted side, from the raw times."""
    from autograder.replay import decide

    if not report.get("correct") or not case.speed:
        return report
    retimed = report.pop("retimed", False)
    report.update(decide(case, report))
    if retimed:
        report["retimed"] = True
    return report


def judge_main(in_dir: Path, out_dir: Path) -> int:
    """The judged step (see the module docstring)."""
    import mlc
    from autograder import program, replay
    from autograder.judged import unpack_arrays
    from mlc.errors import MLCError
    from mlc.script import from_source

    spec = json.loads((in_dir / "spec.json").read_text())
    arrays = list(unpack_arrays(in_dir / "inputs.npz", spec["names"]).values())
    result: dict[str, Any] = {}
    if spec.get("probe") is not None:
        result["probe"] = program._probe(spec["probe"])
    text = (in_dir / "func.txt").read_text()
    with replay.one_cpu():
        try:
            sch = replay._schedule_from_trace(from_source(text),
                                              (in_dir / "trace.json").read_text())
            student = mlc.build(sch.mod, target="llvm", allow_calls=False)
        except Exception as err:  # noqa: BLE001 - any failure is the schedule's
            first = str(err).splitlines()[0] if str(err) else ""
            result.update(ran=False, message=f"the schedule does not replay: "
                                             f"{type(err).__name__}: {first}")
            (out_dir / "result.json").write_text(json.dumps(result))
            return 0
        out = np.zeros(tuple(spec["out_shape"]), spec["out_dtype"])
        try:
            student(*arrays, out)
        except MLCError as err:  # a run-time check of the student's program
            result.update(ran=False, message=f"the schedule does not run: "
                                             f"{type(err).__name__}: {err}")
            (out_dir / "result.json").write_text(json.dumps(result))
            return 0
        np.save(out_dir / "out.npy", out, allow_pickle=False)
        result.update(ran=True, message="")
        if spec["speed"]:
            ref_sch = replay._schedule_from_trace(
                from_source(text), (in_dir / "reference_trace.json").read_text())
            reference = mlc.build(ref_sch.mod, target="llvm")
            ref_out = np.zeros_like(out)
            timing = replay.time_until_decided(
                student, [*arrays, out], reference, [*arrays, ref_out],
                lambda t: _undecided(spec, t), spec["rounds"], spec["min_time"],
                spec["settle"], give_up_below=spec["give_up_below"])
            result["timing"] = {k: timing[k] for k in ("t_reference_rounds",
                                                       "t_student_rounds", "retimed")
                                if k in timing}
    (out_dir / "result.json").write_text(json.dumps(result))
    return 0


def _undecided(spec: dict[str, Any], timing: dict[str, Any]) -> bool:
    """Whether the first batch leaves the credit open (only steers the retiming; the
    trusted side decides from the raw times)."""
    low = linear_credit(timing["ratio_low"], spec["floor"], spec["full"])
    high = linear_credit(timing["ratio_high"], spec["floor"], spec["full"])
    return bool(high - low > spec["undecided_above"])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--judge"]:
        sys.exit(judge_main(Path(sys.argv[2]), Path(sys.argv[3])))
    sys.exit("usage: python -m autograder.judge_trace --judge IN OUT (run by the grader)")
