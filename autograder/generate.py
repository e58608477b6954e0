"""``python -m autograder generate NAME``: instructor notebook -> student notebook + tests.

Reads ``instructor/NAME/NAME.ipynb`` (and its trusted ``grader.py``) and writes

* ``assignments/NAME/NAME.ipynb``: the student version (solutions stubbed, hidden tests
  removed, outputs cleared);
* ``autograder/tests/NAME/tests.json``: per test cell, its id, points, public code, hidden
  code (the export cell) and the case ids it exports;
* ``autograder/tests/NAME/grader.py``: a copy of the trusted checks.

The output is deterministic, so a test can regenerate into a temporary directory and
compare with what is committed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat

from autograder.cases import load_grader
from autograder.notebook import AuthoringError, read_notebook, read_tests, student_notebook

REPO_ROOT = Path(__file__).resolve().parent.parent


def generate(name: str, instructor_root: Path | None = None, assignments_root: Path | None = None,
             tests_root: Path | None = None) -> list[Path]:
    """Write the student notebook and the grading tests of assignment ``name``."""
    instructor_root = instructor_root or REPO_ROOT / "instructor"
    assignments_root = assignments_root or REPO_ROOT / "assignments"
    tests_root = tests_root or REPO_ROOT / "autograder" / "tests"
    src_dir = instructor_root / name
    source = src_dir / f"{name}.ipynb"
    if not source.is_file():
        raise FileNotFoundError(f"no instructor notebook {source}")
    grader_src = src_dir / "grader.py"
    if not grader_src.is_file():
        raise FileNotFoundError(f"{src_dir} needs a grader.py defining CASES (the trusted checks)")
    nb = read_notebook(str(source))
    tests = read_tests(nb, str(source))
    grader = load_grader(grader_src)
    for test in tests:
        for case_id in test.case_ids:
            if case_id not in grader.cases:
                raise AuthoringError(
                    f"{source}: test {test.id!r} exports case {case_id!r}, which "
                    f"{grader_src} does not define (it has {sorted(grader.cases)})")
    student = student_notebook(nb, str(source))
    out_nb = assignments_root / name / f"{name}.ipynb"
    out_nb.parent.mkdir(parents=True, exist_ok=True)
    out_nb.write_text(nbformat.writes(student) + "\n")
    out_tests = tests_root / name
    out_tests.mkdir(parents=True, exist_ok=True)
    spec = {"assignment": name, "tests": [t.to_json() for t in tests],
            "max_score": sum(t.points for t in tests)}
    (out_tests / "tests.json").write_text(json.dumps(spec, indent=1) + "\n")
    shutil.copyfile(grader_src, out_tests / "grader.py")
    extras = [p for p in src_dir.iterdir() if p.suffix == ".py" and p.name != "grader.py"]
    for extra in extras:  # helper modules the grader imports (references, shapes)
        shutil.copyfile(extra, out_tests / extra.name)
    return [out_nb, out_tests / "tests.json", out_tests / "grader.py",
            *[out_tests / e.name for e in extras]]
