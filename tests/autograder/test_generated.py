"""The committed student notebooks and grading tests match the instructor sources."""

from pathlib import Path

import pytest

from autograder.generate import generate

REPO = Path(__file__).resolve().parents[2]
ASSIGNMENTS = sorted(p.name for p in (REPO / "instructor").iterdir()
                     if (p / f"{p.name}.ipynb").is_file())


def test_the_course_has_its_assignments():
    assert {"a1_tensor_expressions", "a2_gemm_schedule"} <= set(ASSIGNMENTS)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_generated_files_are_up_to_date(name, tmp_path):
    written = generate(name, REPO / "instructor", tmp_path / "assignments", tmp_path / "tests")
    for path in written:
        rel = path.relative_to(tmp_path)
        committed = (REPO / rel) if rel.parts[0] == "assignments" else (
            REPO / "autograder" / rel)
        assert committed.is_file(), (
            f"{committed} is missing: run python -m autograder generate {name}")
        assert committed.read_text() == path.read_text(), (
            f"{committed} is stale: run python -m autograder generate {name}")


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_student_notebook_has_no_solutions_or_hidden_tests(name):
    text = (REPO / "assignments" / name / f"{name}.ipynb").read_text()
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "HIDDEN TESTS", "grading.check"):
        assert marker not in text
    assert "raise NotImplementedError()" in text
