"""a4 grades a search space: every sampled decision must reach a loop or block, and speed
points start only once the tuned schedule beats the baseline by the assignment's factor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograder.replay import replay_and_time
from mlc import tir

REPO = Path(__file__).resolve().parents[2]


def _grader():
    from autograder.cases import load_grader

    return load_grader(REPO / "autograder" / "tests" / "a4_tuning" / "grader.py")


A4 = _grader()
N = 64


def trace(schedule) -> str:
    sch = tir.Schedule(A4.module.make_func(N), seed=0)
    schedule(sch)
    text = sch.trace.as_json()
    return text if isinstance(text, str) else json.dumps(text)


def dummy_space(sch):
    """The attack: the untuned baseline plus two sampled decisions nothing uses (6/6)."""
    A4.module.baseline_schedule(sch)
    sch.sample_categorical([0, 16, 64], [0.5, 0.25, 0.25])
    sch.sample_categorical([1, 2], [0.5, 0.5])


def baseline_in_disguise(sch):
    """Two decisions that do reach loops, each forced to the trivial tile: the baseline."""
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=sch.sample_perfect_tile(i, n=2, decision=[N, 1]))
    j0, j1 = sch.split(j, factors=sch.sample_perfect_tile(j, n=2, decision=[N, 1]))
    sch.reorder(i0, i1, k, j0, j1)


def _export(tmp_path: Path, case_id: str, text: str) -> Path:
    exports = tmp_path / "exports"
    exports.mkdir(exist_ok=True)
    (exports / f"{case_id}.json").write_text(json.dumps({"text": text}))
    return exports


@pytest.mark.parametrize("case_id", ["tuned_correct", "tuned_speed"])
def test_a_sampled_decision_that_reaches_nothing_is_refused_with_the_reason(case_id, tmp_path):
    exports = _export(tmp_path, case_id, trace(dummy_space))

    def no_replay(cmd, cwd):
        pytest.fail("an unused decision must be refused before any replay")

    fraction, message = A4.case(case_id).check_export(
        exports, grader_path=A4.path, workdir=tmp_path, run_trusted=no_replay)
    assert fraction == 0.0
    assert "sampled decisions #3 (sample_categorical), #4 (sample_categorical)" in message
    assert "reach no loop or block" in message
    assert A4.case(case_id).check_local(trace(dummy_space))[0] == 0.0


def test_a_decision_used_as_a_split_factor_counts():
    def space(sch):
        i, j, k = sch.get_loops(sch.get_block("C"))
        sch.split(i, factors=sch.sample_perfect_tile(i, n=2, max_innermost_factor=8))
        sch.split(j, factors=[None, sch.sample_categorical([4, 8, 16], [1, 1, 1])])

    text = trace(space)
    assert [used for _, _, used in A4.module.sampled_decisions(text)] == [True, True]
    assert A4.module.count_samples(text) == 2
    assert A4.case("tuned_correct")._space_problem(text) is None


def test_a_decision_only_annotated_onto_a_loop_changes_nothing_and_is_refused():
    """No pass reads an annotation's value: two sampled values annotated onto a loop beside a
    fixed schedule would have passed for a search space."""
    def space(sch):
        i, j, k = sch.get_loops(sch.get_block("C"))
        sch.split(i, factors=sch.sample_perfect_tile(i, n=2, max_innermost_factor=8))
        sch.annotate(j, "pragma_auto_unroll_max_step", sch.sample_categorical([0, 16], [1, 1]))
        sch.annotate(k, "whatever", sch.sample_categorical([1, 2], [1, 1]))

    problem = A4.case("tuned_correct")._space_problem(trace(space))
    assert problem and "#4 (sample_categorical), #6 (sample_categorical)" in problem
    assert "annotation the compiler does not read" in problem


def test_the_baseline_earns_no_speed_points():
    case = A4.case("tuned_speed")
    assert case.floor == A4.module.FACTOR > 1.0
    assert case.score(1.0) == 0.0 and case.score(A4.module.FACTOR) == 0.0
    assert case.score(A4.module.FULL) == 1.0


@pytest.mark.timing
def test_the_baseline_in_disguise_replayed_gets_no_speed_credit(monkeypatch):
    """The old scale gave full speed points from 0.9x the baseline: the baseline itself, with
    two trivial sampled tiles, got 6/6."""
    monkeypatch.setenv("AUTOGRADER_SIZE", str(N))
    case = A4.case("tuned_speed")
    text = trace(baseline_in_disguise)
    assert case._space_problem(text) is None
    report = replay_and_time(case, text)
    assert report["correct"] and report["decided"]
    assert report["ratio"] < A4.module.FACTOR and report["credit"] == 0.0
