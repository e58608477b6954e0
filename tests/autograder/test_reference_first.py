"""``grade`` grades the reference solution first, through the class's own path, and refuses
to start unless it gets full marks; ``doctor`` does the same per assignment."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from autograder.cli import main

BROKEN_REFERENCE = "lambda x: ref_softmax(x) + 1.0"  # what a stale grader.py would do


@pytest.fixture
def broken_tests(demo, tmp_path) -> Path:
    """The demo's tests folder with a grader.py whose softmax_wide no longer matches the
    solution (a silent-zero mode nobody listed)."""
    tests = tmp_path / "tests"
    shutil.copytree(demo["tests"], tests)
    grader = tests / "demo_numpy" / "grader.py"
    text = grader.read_text()
    old = 'Case("softmax_wide", inputs={"x": ((3, 101), "float64")}, reference=ref_softmax)'
    assert old in text
    grader.write_text(text.replace(old, old.replace("reference=ref_softmax",
                                                    f"reference={BROKEN_REFERENCE}")))
    return tests


def _sub(demo, tmp_path: Path) -> Path:
    sub = tmp_path / "subs" / "student.ipynb"
    sub.parent.mkdir(exist_ok=True)
    shutil.copyfile(demo["solution"], sub)
    return sub


def _grade(tests: Path, out: Path, *extra: str) -> int:
    return main(["grade", "--assignment", "demo_numpy", "--tests", str(tests), "--out",
                 str(out), "--timeout", "10", "--quiet", *extra])


def _rows(out: Path) -> list[dict[str, str]]:
    with (out / "grades.csv").open() as f:
        return list(csv.DictReader(f))


def test_a_reference_short_of_full_marks_stops_the_run_naming_the_test(demo, broken_tests,
                                                                       tmp_path, capsys):
    out = tmp_path / "out"
    rc = _grade(broken_tests, out, str(_sub(demo, tmp_path)))
    err = capsys.readouterr().err
    assert rc == 4
    assert "reference solution" in err and "scores 2 / 5" in err and "nobody was graded" in err
    assert "t_softmax: 0 / 3" in err
    assert "hidden test softmax_wide: failed" in err and "values differ" in err
    assert not (out / "grades.csv").exists() and not (out / "student").exists()


def test_the_check_passes_and_the_gradebook_records_it(demo, tmp_path):
    out = tmp_path / "out"
    assert _grade(demo["tests"], out, str(_sub(demo, tmp_path))) == 0
    [row] = _rows(out)
    assert row["score"] == "5" and row["reference_check"] == "full marks (5 / 5)"
    assert "Score: 5 / 5" in (out / "reference-check" / "feedback.md").read_text()


def test_skipping_the_check_is_recorded_in_the_gradebook(demo, broken_tests, tmp_path):
    out = tmp_path / "out"
    assert _grade(broken_tests, out, "--skip-reference-check", str(_sub(demo, tmp_path))) == 0
    [row] = _rows(out)
    assert row["score"] == "2" and row["reference_check"] == "skipped (--skip-reference-check)"


def test_no_reference_to_grade_is_an_error_that_says_what_to_pass(demo, tmp_path, capsys):
    tests = tmp_path / "tests"
    shutil.copytree(demo["tests"], tests)
    (tests / "demo_numpy" / "reference.ipynb").unlink()
    assert _grade(tests, tmp_path / "out", str(_sub(demo, tmp_path))) == 4
    err = capsys.readouterr().err
    assert "no reference solution" in err and "--reference" in err
    assert not (tmp_path / "out" / "grades.csv").exists()
    out = tmp_path / "out2"  # --reference names one elsewhere
    assert _grade(tests, out, "--reference", str(demo["solution"]),
                  str(_sub(demo, tmp_path))) == 0
    assert _rows(out)[0]["reference_check"] == "full marks (5 / 5)"


def test_doctor_grades_the_reference_of_each_assignment(demo, broken_tests, capsys):
    assert main(["doctor", "--tests", str(demo["tests"]), "--timeout", "10"]) == 0
    assert "demo_numpy: the reference solution gets full marks (5 / 5) on a local job" in \
        capsys.readouterr().out
    assert main(["doctor", "--tests", str(broken_tests), "--assignment", "demo_numpy",
                 "--timeout", "10"]) == 4
    err = capsys.readouterr().err
    assert "demo_numpy: FAILED" in err and "hidden test softmax_wide: failed" in err


@pytest.mark.slow
def test_doctor_grades_the_reference_on_a_dask_cluster(demo, capsys):
    pytest.importorskip("distributed")
    assert main(["doctor", "--tests", str(demo["tests"]), "--timeout", "10",
                 "--cluster", "local:1"]) == 0
    out = capsys.readouterr().out
    assert "demo_numpy: the reference solution gets full marks (5 / 5) on Dask" in out, out
