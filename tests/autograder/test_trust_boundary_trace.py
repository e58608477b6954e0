"""Schedule traces (a2, a4) replayed on the student's side of the wall (issue 25).

The trusted side prints the reference computation and the reference schedule's trace and
keeps the expected answer; the judged step (own uid, no capability, no tests folder) replays
the student's trace, builds it with ``allow_calls=False``, runs and times it.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from autograder.cases import load_grader
from autograder.judge_trace import decide_report, judge_trace
from autograder.sandbox import remove_tree
from mlc import tir

REPO = Path(__file__).resolve().parents[2]
GRADER = REPO / "instructor" / "a2_gemm_schedule" / "grader.py"
A2 = load_grader(GRADER)


def _trace(case, schedule) -> str:
    sch = tir.Schedule(case.make_func(**case.effective_params()))
    schedule(sch)
    trace = sch.trace.as_json()
    return trace if isinstance(trace, str) else json.dumps(trace)


@pytest.fixture()
def work():
    path = Path(tempfile.mkdtemp(prefix="trust-trace-"))
    yield path
    remove_tree(path)


def test_the_reference_trace_replays_correct_in_the_judged_step(work, monkeypatch):
    monkeypatch.setenv("AUTOGRADER_SIZE", "64")
    case = A2.case("gemm_speed")
    probe = {"read": [str(GRADER), str(REPO / "instructor")], "write": []}
    report = judge_trace(case, _trace(case, case.reference_schedule), work, rounds=5,
                         min_time=0.002, settle=0.0, hide=[str(GRADER.parent)], probe=probe)
    assert report["correct"] and report["message"] == "correct", report
    assert report["rounds"] >= 5 and report["t_student"] > 0 and report["t_reference"] > 0
    decided = decide_report(case, dict(report))
    assert {"credit", "credit_low", "credit_high", "decided"} <= set(decided)
    caps, status = report["probe"]["caps"], report["probe"]["status"]
    assert int(status["Uid"]) != 0 and caps["CapEff"] == 0 and caps["CapBnd"] == 0
    assert all(v != "read" for v in report["probe"]["read"].values())


def test_a_trace_that_does_not_replay_or_computes_wrong_is_the_students(work, monkeypatch):
    monkeypatch.setenv("AUTOGRADER_SIZE", "64")
    case = A2.case("gemm_correct")
    report = judge_trace(case, "[[\"no_such_primitive\"]]", work)
    assert not report["correct"] and "does not replay" in report["message"]
    report = judge_trace(case, "not json at all", work)
    assert not report["correct"] and "does not replay" in report["message"]


def test_times_the_judged_step_makes_up_are_refused():
    """The judged step's times are data: checked before anything is decided from them."""
    from autograder.judge_trace import _checked_timing

    good = {"t_reference_rounds": [1e-3] * 5, "t_student_rounds": [2e-3] * 5}
    assert _checked_timing(good, 5)["ratio"] == 0.5
    for bad in [{"t_reference_rounds": [1e-3] * 5, "t_student_rounds": [0.0] * 5},
                {"t_reference_rounds": [1e-3] * 5, "t_student_rounds": [float("nan")] * 5},
                {"t_reference_rounds": [1e-3] * 5, "t_student_rounds": [1e-3] * 4},
                {"t_reference_rounds": [1e-3] * 500, "t_student_rounds": [1e-3] * 500},
                {"t_reference_rounds": ["1"] * 5, "t_student_rounds": [1e-3] * 5}, None]:
        assert _checked_timing(bad, 5) is None


def test_the_grader_replays_through_the_judged_step(tmp_path, monkeypatch):
    """autograder.replay's main, as the grader runs it (its trusted runner, nested walls):
    the reference's trace, replayed as a student's, is correct and timed; a trace that does
    not replay is the student's failure, with the reason."""
    from autograder.grade import GradingConfig, _run_trusted

    monkeypatch.setenv("AUTOGRADER_SIZE", "64")
    config = GradingConfig("a2_gemm_schedule", size=64)
    run = lambda cmd, cwd: _run_trusted(cmd, cwd, config)  # noqa: E731
    case = A2.case("gemm_correct")
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "gemm_correct.json").write_text(
        json.dumps({"text": _trace(case, case.reference_schedule)}))
    assert case.check_export(exports, grader_path=GRADER, run_trusted=run,
                             workdir=tmp_path)[0] == 1.0
    (exports / "gemm_correct.json").write_text(json.dumps({"text": "[[\"nope\"]]"}))
    fraction, message = case.check_export(exports, grader_path=GRADER, run_trusted=run,
                                          workdir=tmp_path)[:2]
    assert fraction == 0.0 and "does not replay" in message, message
