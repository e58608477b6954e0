"""The a6_vdla grader: a te schedule's trace, replayed, graded on simulated cycles."""

from __future__ import annotations

import json
from pathlib import Path

from autograder.cases import load_grader, run_plain
from mlc.vdla.schedules import gemm_schedule

GRADER = Path(__file__).resolve().parents[2] / "autograder" / "tests" / "a6_vdla" / "grader.py"


def trace_of(**kw: int) -> str:
    s, _ = gemm_schedule(256, 256, 256, **kw)
    text = s.sch.trace.as_json()
    return text if isinstance(text, str) else json.dumps(text)


def test_reference_schedule_gets_full_points_and_cycles_are_deterministic() -> None:
    case = load_grader(GRADER).case("vdla_gemm_cycles")
    first = case.evaluate(trace_of(block=64, kblock=64, threads=1))
    again = case.evaluate(trace_of(block=64, kblock=64, threads=1))
    assert first["correct"] and first == again and first["ratio"] == 1.0
    assert case.check_local(trace_of(block=64, kblock=64, threads=1))[0] == 1.0


def test_latency_hiding_scores_above_the_reference_and_a_slow_schedule_below() -> None:
    case = load_grader(GRADER).case("vdla_gemm_cycles")
    fast, msg = case.check_local(trace_of(block=64, kblock=128, threads=2))
    assert fast == 1.0 and "simulated cycles against the reference's" in msg
    slow, msg = case.check_local(trace_of(block=32, kblock=32, threads=1))
    assert 0.0 <= slow < 0.5, msg


def test_a_wrong_or_broken_schedule_scores_nothing() -> None:
    case = load_grader(GRADER).case("vdla_gemm_correct")
    score, msg = case.check_local("[]")  # an empty trace: the plain GEMM, no vdla buffers
    assert score == 0.0 and "LoweringError" in msg


def test_the_grader_replays_in_its_own_process(tmp_path: Path) -> None:
    grader = load_grader(GRADER)
    case = grader.case("vdla_gemm_cycles")
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "vdla_gemm_cycles.json").write_text(
        json.dumps({"text": trace_of(block=64, kblock=64, threads=2)}))
    score, msg = case.check_export(exports, grader_path=GRADER, run_trusted=run_plain,
                                   workdir=tmp_path)
    assert score == 1.0, msg
