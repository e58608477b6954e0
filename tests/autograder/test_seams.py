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


def _demo_subs(demo, tmp_path: Path, **named: Path) -> list[Path]:
    subs = tmp_path / "subs"
    subs.mkdir(exist_ok=True)
    return [Path(shutil.copyfile(src, subs / name)) for name, src in named.items()]


def _grade_demo(demo, out: Path, subs: list[Path], *extra: str) -> int:
    return main(["grade", "--assignment", "demo_numpy", "--tests", str(demo["tests"]),
                 "--out", str(out), "--timeout", "10", "--quiet", *extra, *map(str, subs)])


@pytest.mark.parametrize("name", ["grades.csv.ipynb", "GRADES.CSV.ipynb",
                                  "reference-check.ipynb"])
def test_a_name_that_is_the_graders_own_output_stops_the_run_before_grading(demo, tmp_path,
                                                                            name, capsys):
    """``grades.csv.ipynb`` made ``out/grades.csv/``; after everyone was graded, writing the
    gradebook raised IsADirectoryError: no gradebook for anyone."""
    subs = _demo_subs(demo, tmp_path, **{name: demo["solution"],
                                         "other.ipynb": demo["solution"]})
    out = tmp_path / "out"
    assert _grade_demo(demo, out, subs, "--skip-reference-check") == 2
    err = capsys.readouterr().err
    assert name in err and "rename it" in err
    assert not (out / "grades.csv").exists() and not (out / "other").exists()


def _big_notebook(src: Path, dest: Path, megabytes: float) -> Path:
    import nbformat

    nb = nbformat.read(str(src), as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("x" * int(megabytes * 1e6)))
    nbformat.write(nb, str(dest))
    return dest


def test_a_submission_over_the_size_cap_is_refused_before_parsing(demo, tmp_path, monkeypatch):
    """A 100 MB notebook took the unsandboxed grader to 392 MB before anything looked at it;
    now one over --max-size-mb (20 MB by default) is not read: status ``too large``."""
    import nbformat

    subs = _demo_subs(demo, tmp_path, **{"solution.ipynb": demo["solution"]})
    subs.append(_big_notebook(demo["solution"], tmp_path / "subs" / "huge.ipynb", 21))
    subs.append(_big_notebook(demo["solution"], tmp_path / "subs" / "small.ipynb", 0.5))
    parsed = []
    real_reads = nbformat.reads
    monkeypatch.setattr(nbformat, "reads", lambda text, *a, **k: parsed.append(len(text)) or
                        real_reads(text, *a, **k))
    out = tmp_path / "out"
    assert _grade_demo(demo, out, subs, "--skip-reference-check") == 0
    rows = _rows(out)
    assert rows["huge"]["status"] == "too large" and rows["huge"]["score"] == "0"
    assert "21.0 MB, more than the 20 MB" in rows["huge"]["reason"]
    assert "too large" in (out / "huge" / "feedback.md").read_text()
    assert parsed and max(parsed) < 20e6  # the 21 MB one was never parsed
    assert rows["small"]["status"] == "ok" and rows["small"]["score"] == "5"
    assert rows["solution"]["score"] == "5"
    out2 = tmp_path / "out2"  # the cap is the instructor's: 0.1 MB refuses the 0.5 MB one
    assert _grade_demo(demo, out2, subs[2:], "--skip-reference-check",
                       "--max-size-mb", "0.1") == 0
    assert _rows(out2)["small"]["status"] == "too large"


def test_a_shipped_job_over_the_cap_is_neither_read_nor_sent(demo, tmp_path):
    from autograder.grade import GradingConfig, ShippedSubmission, grade_shipped

    big = _big_notebook(demo["solution"], tmp_path / "huge.ipynb", 2)
    config = GradingConfig("demo_numpy", tests_root=demo["tests"], max_bytes=1_000_000)
    job = ShippedSubmission.pack(big, config)
    assert job.notebook == b"" and job.refused[0] == "too large"
    result = grade_shipped(job)
    assert result.status == "too large" and result.score == 0 and result.student == "huge"


def test_a_trusted_step_that_fails_is_a_grader_error_never_a_zero(tmp_path, monkeypatch,
                                                                  capsys):
    """A replay or program run that crashed, was killed or wrote no report used to be the
    student's zero ("running the program failed"); it is the grader's failure, named."""
    from autograder import grade

    monkeypatch.setattr(grade, "_run_trusted", lambda cmd, cwd, config, timed=False:
                        (-9, "Killed"))
    sub = tmp_path / "solution.ipynb"
    sub.write_bytes((REPO / "instructor" / A1 / f"{A1}.ipynb").read_bytes())
    out = tmp_path / "out"
    rc = main(["grade", "--assignment", A1, "--out", str(out), "--timeout", "60", "--quiet",
               "--skip-reference-check", str(sub)])
    row = _rows(out)["solution"]
    assert rc == 1 and row["status"] == "grader-error"
    assert "CheckNotRun" in row["reason"] and "program failed (exit status -9" in row["reason"]
    assert "grader-error for solution" in capsys.readouterr().err
    out2 = tmp_path / "out2"  # and the reference check stops the run, naming it
    assert main(["grade", "--assignment", A1, "--out", str(out2), "--timeout", "60",
                 "--quiet", str(sub)]) == 4
    err = capsys.readouterr().err
    assert "status grader-error: CheckNotRun" in err and not (out2 / "grades.csv").exists()


def test_a_link_or_a_fifo_is_refused_unread(demo, tmp_path):
    """A tar archive keeps links: ``alice.ipynb -> /etc/shadow`` came back in the feedback's
    'not JSON' message (its first characters); ``-> /dev/zero`` or a FIFO never ended."""
    import os

    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-KEY-0123456789")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.ipynb").symlink_to(secret)
    (subs / "zero.ipynb").symlink_to("/dev/zero")
    os.mkfifo(subs / "fifo.ipynb")
    out = tmp_path / "out"
    assert _grade_demo(demo, out, sorted(subs.iterdir()), "--skip-reference-check") == 0
    rows = _rows(out)
    assert rows["alice"]["status"] == rows["zero"]["status"] == "unreadable"
    assert "a link, not a file" in rows["alice"]["reason"]
    assert rows["fifo"]["status"] == "unreadable" and "not a regular file" in rows["fifo"]["reason"]
    for student in ("alice", "zero", "fifo"):
        assert "TOP-SECRET" not in (out / student / "feedback.md").read_text()


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "lots"])
def test_a_size_cap_that_is_no_cap_is_refused(demo, tmp_path, value, capsys):
    """``--max-size-mb 0`` was read as 'no cap'."""
    with pytest.raises(SystemExit) as exit_:
        _grade_demo(demo, tmp_path / "out", [demo["solution"]], "--max-size-mb", value)
    assert exit_.value.code == 2 and "positive number of megabytes" in capsys.readouterr().err


def test_an_undecided_speed_grade_marks_the_submission_for_review(tmp_path, monkeypatch,
                                                                  capsys):
    """A speed credit the timing could not decide is provisional: the row's status is
    ``needs review``, the reason names the test and case, and stderr lists it."""
    from autograder.cases import NEEDS_REVIEW, TraceCase

    real = TraceCase.check_export

    def undecided(self, exports, **kw):
        fraction, message, *_ = real(self, exports, **kw)
        return (fraction, message, NEEDS_REVIEW) if self.speed else (fraction, message)

    monkeypatch.setattr(TraceCase, "check_export", undecided)
    name = "a2_gemm_schedule"
    sub = tmp_path / "solution.ipynb"
    sub.write_bytes((REPO / "instructor" / name / f"{name}.ipynb").read_bytes())
    out = tmp_path / "out"
    rc = main(["grade", "--assignment", name, "--out", str(out), "--timeout", "60", "--quiet",
               "--size", "64", "--skip-reference-check", str(sub)])
    row = _rows(out)["solution"]
    assert rc == 1 and row["status"] == "needs review"  # not every grade is final
    assert "gemm_speed" in row["reason"] and "re-grade on a quieter machine" in row["reason"]
    assert "needs review: solution:" in capsys.readouterr().err
    assert "Note: needs review" in (out / "solution" / "feedback.md").read_text()


def test_a_name_that_is_not_utf8_stops_the_run_before_grading(demo, tmp_path, capsys):
    """A file named b'\\xff.ipynb' was graded, then writing its name into grades.csv raised
    UnicodeEncodeError: no gradebook for anyone."""
    import os

    subs = tmp_path / "subs"
    subs.mkdir()
    bad = os.path.join(os.fsencode(subs), b"\xffbad.ipynb")
    with open(bad, "wb") as f:
        f.write(demo["solution"].read_bytes())
    other = _demo_subs(demo, tmp_path, **{"other.ipynb": demo["solution"]})
    out = tmp_path / "out"
    assert _grade_demo(demo, out, [Path(os.fsdecode(bad)), *other],
                       "--skip-reference-check") == 2
    assert "not valid UTF-8" in capsys.readouterr().err
    assert not (out / "grades.csv").exists() and not (out / "other").exists()


def test_feedback_text_that_is_not_utf8_is_written_escaped(tmp_path):
    """A check's message can carry a lone surrogate (a "\\udcff" escape in a JSON report);
    writing it raised UnicodeEncodeError and stopped the run before the gradebook."""
    from autograder.grade import SubmissionResult, TestResult
    from autograder.report import write_gradebook, write_student

    test = TestResult("t", 1.0, 0.0, False, "public \udcff", [("c", False, "bad \udcff", True)])
    result = SubmissionResult("alice", "a", [test], "ok", "reason \udcff")
    write_student(tmp_path, result)
    write_gradebook(tmp_path, [result])
    assert "bad \\udcff" in (tmp_path / "alice" / "feedback.md").read_text()
    assert "reason \\udcff" in (tmp_path / "grades.csv").read_text()
