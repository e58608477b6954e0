"""The seams between the grader's parts: where the tests folder lives, what a submission is
named, how large it is. Each used to zero a class or abort the run without a grade."""

from __future__ import annotations

import csv
import shutil
import tempfile
from pathlib import Path

import pytest

from autograder.cli import main

REPO = Path(__file__).resolve().parents[2]
A1 = "a1_tensor_expressions"


def _rows(out: Path) -> dict[str, dict[str, str]]:
    with (out / "grades.csv").open() as f:
        return {r["student"]: r for r in csv.DictReader(f)}


@pytest.mark.slow
@pytest.mark.parametrize("scratch", ["/tmp", "/dev/shm"])
def test_a_tests_folder_in_a_scratch_folder_grades_the_solution_in_full(scratch, tmp_path):
    """The trusted runners have a private /tmp and /dev/shm: a tests folder there was
    invisible to the replay and program checks, and the solution scored 0/10, status ok."""
    if not Path(scratch).is_dir():
        pytest.skip(f"no {scratch} on this machine")
    root = Path(tempfile.mkdtemp(prefix="ag-tests-", dir=scratch))
    try:
        shutil.copytree(REPO / "autograder" / "tests" / A1, root / A1)
        sub = tmp_path / "solution.ipynb"
        sub.write_bytes((REPO / "instructor" / A1 / f"{A1}.ipynb").read_bytes())
        out = tmp_path / "out"
        rc = main(["grade", "--assignment", A1, "--tests", str(root), "--out", str(out),
                   "--timeout", "60", "--quiet", "--skip-reference-check", str(sub)])
        row = _rows(out)["solution"]
        assert rc == 0 and row["score"] == row["max_score"] == "10", (
            (out / "solution" / "feedback.md").read_text())
    finally:
        shutil.rmtree(root, ignore_errors=True)
