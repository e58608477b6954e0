"""Write grades: ``grades.csv``, and per student ``feedback.md`` and ``results.json``.

``results.json`` follows Gradescope's autograder format::

    {"score": 7.5, "tests": [{"name": "t_softmax", "score": 2, "max_score": 2,
                              "output": "...", "visibility": "visible"}]}
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from autograder.grade import SubmissionResult


def _fmt(x: float) -> str:
    return f"{x:g}"


def write_student(out: Path, result: SubmissionResult) -> None:
    folder = out / result.student
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"# {result.assignment}: {result.student}", "",
             f"**Score: {_fmt(result.score)} / {_fmt(result.max_score)}**", ""]
    if result.status == "grader-error":
        lines += ["Note: not graded: the grader itself failed "
                  f"({result.reason}). Your instructor will grade it again.", ""]
    elif result.status != "ok":
        lines += [f"Note: {result.status}.", ""]
    for test in result.tests:
        mark = "passed" if test.passed else ("partial" if test.score > 0 else "failed")
        lines.append(f"## {test.id}: {mark} ({_fmt(test.score)} / {_fmt(test.max_score)} points)")
        text = test.feedback()
        if text:
            lines += ["", "```", text, "```"]
        lines.append("")
    # text from a check may hold a lone surrogate (a JSON "\udcff" escape in a report): it is
    # written escaped, never an UnicodeEncodeError that stops the run before the gradebook
    (folder / "feedback.md").write_text("\n".join(lines), encoding="utf-8",
                                        errors="backslashreplace")
    gradescope = {
        "score": result.score,
        "max_score": result.max_score,
        "tests": [{"name": t.id, "score": t.score, "max_score": t.max_score,
                   "output": t.feedback(), "visibility": "visible"} for t in result.tests],
    }
    (folder / "results.json").write_text(json.dumps(gradescope, indent=1) + "\n")


GRADEBOOK = "grades.csv"
REFERENCE_FOLDER = "reference-check"
RESERVED = (GRADEBOOK, REFERENCE_FOLDER)
"""Names in the output folder that are the grader's own: a student's folder is the stem of
the submission, and ``grades.csv.ipynb`` made ``out/grades.csv/``, so writing the gradebook
failed with IsADirectoryError after everyone had been graded."""


def reserved_name(student: str) -> str:
    """The grader's own output that ``student``'s folder would collide with ("" if none;
    case-insensitively, for file systems that fold case)."""
    for name in RESERVED:
        if student.casefold() == name.casefold():
            return name
    return ""


def write_gradebook(out: Path, results: list[SubmissionResult],
                    reference_check: str = "") -> Path:
    """``grades.csv``: one row per student; ``reference_check`` says how the reference
    solution fared before the class was graded (or that the check was skipped)."""
    out.mkdir(parents=True, exist_ok=True)
    test_ids: list[str] = []
    for r in results:
        for t in r.tests:
            if t.id not in test_ids:
                test_ids.append(t.id)
    path = out / GRADEBOOK
    with path.open("w", newline="", encoding="utf-8", errors="backslashreplace") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "assignment", "score", "max_score", "status", *test_ids,
                         "reason", "reference_check"])
        for r in sorted(results, key=lambda r: r.student):
            per_test = {t.id: t.score for t in r.tests}
            writer.writerow([r.student, r.assignment, _fmt(r.score), _fmt(r.max_score), r.status,
                             *[_fmt(per_test.get(i, 0.0)) for i in test_ids], r.reason,
                             reference_check])
    return path
