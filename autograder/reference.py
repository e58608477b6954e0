"""Grade the reference solution first, through the path the class takes.

A grading run can be wrong for everyone at once: a tests folder the trusted steps cannot see,
a worker that unpacks the tests where the replay does not look, a machine too loaded to time,
a grader.py that no longer matches the notebook. Each of these once gave a whole class zero,
status ``ok``. They have one symptom in common: the instructor's own solution does not get
full marks. So before ``grade`` starts on a class it grades the reference solution as one
more submission, on the same executor (local jobs or the Dask cluster), with the same tests
folder and limits, and stops, loudly, unless it gets every point::

    error: the reference solution instructor/a1_tensor_expressions/a1_tensor_expressions.ipynb
    scores 0 / 10 (status ok) on this grading path (local jobs); nobody was graded.
    ...
      t_conv2d: 0 / 3
        hidden test conv2d_a: failed (wrong result: 96 of 96 values differ; ...)

``doctor`` runs the same check for every assignment. ``--skip-reference-check`` skips it; the
gradebook's ``reference_check`` column then says ``skipped``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autograder.grade import REPO_ROOT, GradingConfig, SubmissionResult

SKIPPED = "skipped (--skip-reference-check)"


class ReferenceCheckFailed(RuntimeError):
    """The reference solution did not get full marks (or could not be found): the message
    says which test, with its feedback; nobody is graded."""


def find_reference(config: GradingConfig, explicit: str | None = None) -> Path:
    """The reference solution of ``config.assignment``: ``explicit`` (``--reference``), else
    ``reference.ipynb`` in the tests folder, else ``instructor/NAME/NAME.ipynb``."""
    name = config.assignment
    candidates = ([Path(explicit)] if explicit else
                  [config.tests_dir / "reference.ipynb",
                   REPO_ROOT / "instructor" / name / f"{name}.ipynb"])
    for path in candidates:
        if path.is_file():
            return path.resolve()
    raise ReferenceCheckFailed(
        f"no reference solution for {name!r} (looked for {', '.join(map(str, candidates))}); "
        "pass --reference NOTEBOOK, or --skip-reference-check to grade without this check "
        "(the gradebook will say it was skipped)")


def reference_problems(result: SubmissionResult) -> list[str]:
    """What keeps ``result`` (the reference solution's grade) from full marks, test by test,
    with every hidden case's message (the instructor sees them all)."""
    lines = []
    if result.status != "ok":
        lines.append(f"status {result.status}" + (f": {result.reason}" if result.reason else ""))
    for test in result.tests:
        if test.score >= test.max_score:
            continue
        lines.append(f"{test.id}: {test.score:g} / {test.max_score:g}")
        if test.public_message:
            lines += [f"    {line}" for line in test.public_message.splitlines()]
        for case_id, ok, message, _ in test.hidden:
            if not ok:
                lines.append(f"    hidden test {case_id}: failed ({message or 'no message'})")
    if not result.tests:
        lines.append("the assignment has no tests")
    return lines


def describe_failure(path: Path, result: SubmissionResult, where: str) -> str:
    """The message an instructor sees when the reference does not get full marks."""
    lines = [f"error: the reference solution {path} scores {result.score:g} / "
             f"{result.max_score:g} (status {result.status}) on this grading path ({where}); "
             "nobody was graded.",
             "Every student would be graded by the same broken path. What failed:"]
    lines += [f"  {line}" for line in reference_problems(result)]
    lines += ["Fix the tests folder, the machine or the solution and run again; "
              "`python -m autograder doctor` checks every assignment this way. "
              "--skip-reference-check grades anyway (the gradebook records it)."]
    return "\n".join(lines)


def check_reference(executor: Any, config: GradingConfig, path: Path, remote: bool,
                    where: str) -> SubmissionResult:
    """Grade the reference ``path`` on ``executor`` exactly as a submission would be
    (``grade_shipped`` on a cluster, ``grade_or_error`` here); raise
    :class:`ReferenceCheckFailed` unless it scores full marks with status ``ok``."""
    from autograder.grade import ShippedSubmission, error_result, grade_or_error, grade_shipped

    future = (executor.submit(grade_shipped, ShippedSubmission.pack(path, config)) if remote
              else executor.submit(grade_or_error, path, config))
    try:
        result: SubmissionResult = future.result()
    except Exception as err:  # noqa: BLE001 - a worker that kept dying, say
        result = error_result(path.stem, config, err)
    if result.status != "ok" or result.score < result.max_score or not result.tests:
        raise ReferenceCheckFailed(describe_failure(path, result, where))
    return result


def passed_note(result: SubmissionResult) -> str:
    """The gradebook's ``reference_check`` value after a passed check."""
    return f"full marks ({result.score:g} / {result.max_score:g})"
