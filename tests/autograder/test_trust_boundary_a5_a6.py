"""a5 (cuda-sim GEMM) and a6 (VDLA GEMM) schedules judged on the student's side of the wall
(issue 25).

Before, each ``grader.py`` replayed the student's trace, built it and ran it (cuda-sim, the
VDLA simulator, the performance model) in the grader's own trusted runner: root, beside the
hidden tests and the reference solutions. Now the grader draws the inputs and keeps the
expected answer and the reference's time or cycles; the judged step
(:mod:`autograder.judge_gpu`: own uid, no capability, no tests folder) replays, builds
(cuda-sim with ``allow_calls=False``) and runs; the grader checks what comes back and decides.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from autograder import judge_gpu
from autograder.cases import load_grader
from autograder.sandbox import is_root, remove_tree

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
A5_DIR = REPO / "instructor" / "a5_gpu_matmul"
A6_DIR = REPO / "instructor" / "a6_vdla"
A5 = load_grader(A5_DIR / "grader.py")
A6 = load_grader(A6_DIR / "grader.py")
INNER = "AUTOGRADER_TRUST_A5_A6_AS_USER"
NOBODY = 65534


def _json(trace) -> str:
    text = trace.as_json()
    return text if isinstance(text, str) else json.dumps(text)


def a5_reference_trace(n: int = 128) -> str:
    return _json(A5.module.reference_schedule(n).trace)


def a6_reference_trace(n: int = 256) -> str:
    s, _ = A6.module.reference_schedule(n)
    return _json(s.sch.trace)


@pytest.fixture()
def work():
    path = Path(tempfile.mkdtemp(prefix="trust-a5-a6-"))
    os.chmod(path, 0o755)
    yield path
    remove_tree(path)


def _secrets(folder: Path, name: str) -> list[str]:
    shipped = REPO / "autograder" / "tests" / name
    return [str(folder / "grader.py"), str(folder / f"{name}.ipynb"),
            str(shipped / "grader.py"), str(shipped / "tests.json")]


def _assert_no_privilege_no_secret(probe) -> None:
    status, caps = probe["status"], probe["caps"]
    assert int(status["Uid"]) != 0, status
    assert caps["CapEff"] == 0 and caps["CapPrm"] == 0 and caps["CapBnd"] == 0, caps
    assert status["NoNewPrivs"] == "1" and status["Seccomp"] == "2", status
    assert all(v != "read" for v in probe["read"].values()), probe["read"]
    assert all(v != "written" for v in probe["write"].values()), probe["write"]


@pytest.mark.parametrize("case_id", ["gpu_mm_checked", "gpu_mm_speed"])
def test_a5_schedule_is_judged_without_privilege_or_secrets(work, case_id):
    """From inside the step that replays, builds, runs (and checks or predicts) the a5
    schedule: not root, no capability, and neither the grader nor the solution readable.
    The reference's trace, judged there, is still correct and as fast as the reference."""
    pwned = REPO / "pwned-by-a5-schedule"
    probe = {"read": _secrets(A5_DIR, "a5_gpu_matmul"), "write": [str(pwned)]}
    report = A5.case(case_id).evaluate(a5_reference_trace(), work, hide=[str(A5_DIR)],
                                       probe=probe)
    assert report["ok"], report
    if case_id == "gpu_mm_speed":
        assert report["ratio"] == 1.0 and report["time"] == report["ref_time"]
    else:
        assert "no races" in report["message"]
    _assert_no_privilege_no_secret(report["probe"])
    assert not pwned.exists()


def test_a6_schedule_is_judged_without_privilege_or_secrets(work):
    pwned = REPO / "pwned-by-a6-schedule"
    probe = {"read": _secrets(A6_DIR, "a6_vdla"), "write": [str(pwned)]}
    report = A6.case("vdla_gemm_cycles").evaluate(a6_reference_trace(), work,
                                                  hide=[str(A6_DIR)], probe=probe)
    assert report["correct"] and report["ratio"] == 1.0, report
    assert report["cycles"] == report["ref_cycles"] > 0
    _assert_no_privilege_no_secret(report["probe"])
    assert not pwned.exists()


def test_the_judged_and_the_local_check_agree(work):
    """The student's own check (in process) and the grader's (judged step) run the same
    replay: the same verdict, time and cycles, and the same reason for a broken trace."""
    a5 = A5.case("gpu_mm_speed")
    assert a5.evaluate(a5_reference_trace(), work) == a5.evaluate(a5_reference_trace())
    a6 = A6.case("vdla_gemm_correct")
    judged, local = a6.evaluate("[]", work), a6.evaluate("[]")
    assert judged == local and not judged["correct"] and "LoweringError" in judged["message"]


@pytest.mark.parametrize("grader, case_id, trace", [
    (A5, "gpu_mm_correct", a5_reference_trace), (A6, "vdla_gemm_correct", a6_reference_trace)])
def test_a_judged_step_without_every_wall_is_a_grader_error(monkeypatch, tmp_path, capsys,
                                                            grader, case_id, trace):
    """A sandbox that starts without its walls is never a grade: ``evaluate`` raises, the
    grader's script prints GRADER-ERROR and exits 3, writes no report, and the check's
    runner turns that into SandboxUnavailable (the grader's grader-error row)."""
    from autograder import judged
    from autograder.judged import raise_if_grader_error
    from autograder.sandbox import SandboxResult, SandboxUnavailable

    monkeypatch.setattr(judged, "run_sandboxed", lambda *a, **k: SandboxResult(
        0, "", False, {"mount_ns": True}))
    text = trace()
    with pytest.raises(judge_gpu.JudgeUnavailable, match="lacks"):
        grader.case(case_id).evaluate(text, tmp_path)
    (tmp_path / "trace.json").write_text(text)
    out = tmp_path / "report.json"
    capsys.readouterr()
    assert grader.module.main([case_id, str(tmp_path / "trace.json"), str(out)]) == 3
    err = capsys.readouterr().err
    assert not out.exists() and "GRADER-ERROR: " in err
    with pytest.raises(SandboxUnavailable, match="lacks"):
        raise_if_grader_error(err)


def test_a_judged_step_that_runs_out_of_time_is_a_failed_check(work):
    """The student's step stopped (here by its time limit) is the student's failure, with
    the reason; not a zero without one, not a grader error."""
    n = 384  # the race checker interprets every access: about 30 s of work, stopped at 3
    run = judge_gpu.judge_schedule(
        "cuda-sim", A5.module.make_func(n), a5_reference_trace(n),
        {"A": np.ones((n, n), "float32"), "B": np.ones((n, n), "float32")},
        (n, n), "float32", work, check=True, wall_s=3)
    assert not run.ran and "could not be checked" in run.message, run.message
    assert "ran out of time" in run.message, run.message


def _out(shape=(4, 4), dtype="float32") -> dict[str, bytes]:
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.zeros(shape, dtype), allow_pickle=False)
    return {"out.npy": buffer.getvalue()}


def _huge_header() -> bytes:
    """A .npy header that claims 4 TiB of float32 (np.load would allocate them first)."""
    import io

    from numpy.lib import format as npy

    f = io.BytesIO()
    npy.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False,
                                   "shape": (1 << 40,)})
    return f.getvalue() + b"\0" * 64


@pytest.mark.parametrize("result, files, target, predict, words", [
    ({"ran": "yes"}, _out(), "cuda-sim", False, "did not run"),
    ({"ran": True}, {}, "cuda-sim", False, "missing"),
    ({"ran": True}, {"out.npy": b"\x93NUMPY garbage"}, "cuda-sim", False, "cannot be read"),
    ({"ran": True}, {"out.npy": _out()["out.npy"][:-8]}, "cuda-sim", False, "cannot be read"),
    ({"ran": True}, {"out.npy": _huge_header()}, "cuda-sim", False, "[1099511627776]"),
    ({"ran": True}, _out((4, 5)), "cuda-sim", False, "[4, 5]"),
    ({"ran": True}, _out(dtype="float64"), "cuda-sim", False, "float64"),
    ({"ran": True, "cycles": True}, _out(dtype="int32"), "vdla", False, "cycle count"),
    ({"ran": True, "cycles": 1.5}, _out(dtype="int32"), "vdla", False, "cycle count"),
    ({"ran": True, "cycles": 0}, _out(dtype="int32"), "vdla", False, "cycle count"),
    ({"ran": True, "cycles": 1 << 70}, _out(dtype="int32"), "vdla", False, "cycle count"),
    ({"ran": True}, _out(dtype="int32"), "vdla", False, "cycle count"),
])
def test_what_the_judged_step_reports_is_checked_before_use(result, files, target, predict,
                                                            words):
    dtype = "int32" if target == "vdla" else "float32"
    run = judge_gpu._checked(result, files, (4, 4), dtype, target, predict)
    assert not run.ran and words in run.message, run.message


@pytest.mark.parametrize("time", [0.0, -1e-5, float("nan"), float("inf"), 1e300, "1e-5",
                                  None, 1])
def test_a_predicted_time_that_is_not_a_usable_number_fails_the_speed_check(time):
    run = judge_gpu._checked({"ran": True, "time": time}, _out(), (4, 4), "float32",
                             "cuda-sim", True)
    assert run.ran and run.time is None and "not usable" in run.predict_error
    case = A5.case("gpu_mm_speed")
    a = b = np.zeros((4, 4), "float32")
    report = case._report(run, a, b)
    assert not report["ok"] and "not usable" in report["message"], report


def test_the_grader_path_judges_a5_and_a6_in_the_trusted_runner(tmp_path):
    """Through the runner the grader uses (root: nested walls): the reference's traces are
    full marks, a trace that does not build is the student's failure with the reason."""
    from autograder.grade import GradingConfig, _run_trusted

    for grader, name, case_id, trace, words in [
            (A5, "a5_gpu_matmul", "gpu_mm_speed", a5_reference_trace, "CodegenError"),
            (A6, "a6_vdla", "vdla_gemm_cycles", a6_reference_trace, "LoweringError")]:
        config = GradingConfig(name)
        run = lambda cmd, cwd, config=config: _run_trusted(cmd, cwd, config)  # noqa: E731
        case = grader.case(case_id)
        exports = tmp_path / name
        exports.mkdir()
        (exports / f"{case_id}.json").write_text(json.dumps({"text": trace()}))
        score, message = case.check_export(exports, grader_path=grader.path, run_trusted=run,
                                           workdir=tmp_path)
        assert score == 1.0, message
        (exports / f"{case_id}.json").write_text(json.dumps({"text": "[]"}))
        score, message = case.check_export(exports, grader_path=grader.path, run_trusted=run,
                                           workdir=tmp_path)
        assert score == 0.0 and words in message, message


@pytest.mark.skipif(bool(os.environ.get(INNER)), reason="graded in the outer run only")
@pytest.mark.parametrize("name", ["a5_gpu_matmul", "a6_vdla"])
def test_grading_the_reference_and_a_blank_notebook(tmp_path, name):
    """End to end (``grade``, two jobs): the instructor's solution, graded as a student,
    gets full marks; the student notebook as handed out gets 0, status ok."""
    from autograder.cli import main

    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copyfile(REPO / "instructor" / name / f"{name}.ipynb", subs / "reference.ipynb")
    shutil.copyfile(REPO / "assignments" / name / f"{name}.ipynb", subs / "blank.ipynb")
    out = tmp_path / "out"
    assert main(["grade", "--assignment", name, "--out", str(out), "--quiet", "--jobs", "2",
                 "--skip-reference-check", str(subs / "reference.ipynb"),
                 str(subs / "blank.ipynb")]) == 0
    with (out / "grades.csv").open() as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    ref, blank = rows["reference"], rows["blank"]
    assert ref["status"] == "ok" and float(ref["score"]) == float(ref["max_score"]) > 0, ref
    assert blank["status"] == "ok" and float(blank["score"]) == 0, blank


@pytest.mark.skipif(not is_root(), reason="dropping to an ordinary user needs root")
@pytest.mark.skipif(bool(os.environ.get(INNER)), reason="this is the ordinary user's run")
def test_again_as_an_ordinary_user():
    """The judged steps of an ordinary user's grader: walls from a user namespace, the
    capabilities it holds there dropped too."""
    home = Path(tempfile.mkdtemp(prefix="trust-a5-a6-user-",
                                 dir="/run" if os.path.isdir("/run") else None))
    try:
        os.chown(home, NOBODY, NOBODY)
        os.chmod(home, 0o755)
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home),
               INNER: "1", "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8",
               "PYTHONPATH": str(REPO)}
        cmd = [sys.executable, str(HERE / "as_user.py"), str(NOBODY), "--", sys.executable,
               "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
               f"--basetemp={home}/t", str(Path(__file__)), "-k",
               "without_privilege or grader_path"]
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
        assert "4 passed" in proc.stdout, proc.stdout[-2000:]
    finally:
        remove_tree(home)


def test_an_output_header_claiming_terabytes_is_refused_unread(monkeypatch, tmp_path):
    """Before: ``np.load`` allocated what the header of a judged step's output claims
    (a 4 TiB float32 array: MemoryError in the trusted runner). Now the header is checked
    first, for a5/a6's outputs and for a2/a4's trace outputs alike."""
    from autograder import judged
    from autograder.judge_trace import judge_trace

    run = judge_gpu._checked({"ran": True}, {"out.npy": _huge_header()}, (4, 4), "float32",
                             "cuda-sim", False)
    assert not run.ran and "[1099511627776]" in run.message
    monkeypatch.setenv("AUTOGRADER_SIZE", "64")
    monkeypatch.setattr(judged, "run_judged", lambda *a, **k: judged.Judged(
        {"ran": True}, {"out.npy": _huge_header()}, {}, ""))
    a2 = load_grader(REPO / "instructor" / "a2_gemm_schedule" / "grader.py")
    report = judge_trace(a2.case("gemm_correct"), "[]", tmp_path)
    assert not report["correct"] and "[1099511627776]" in report["message"], report


def test_a_trace_that_is_not_utf8_text_is_the_students_failure(tmp_path):
    """A lone surrogate in the exported trace ('\\udcff' in its JSON) stopped the check with
    UnicodeEncodeError (a grader-error row); it is a trace that cannot be read."""
    from autograder.cases import run_plain

    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "vdla_gemm_correct.json").write_text(json.dumps({"text": "\udcff[]"}))
    score, message = A6.case("vdla_gemm_correct").check_export(
        exports, grader_path=A6.path, run_trusted=run_plain, workdir=tmp_path)
    assert score == 0.0 and "cannot be read" in message and "surrogate" in message, message


def test_a_te_program_output_header_claiming_terabytes_is_refused_unread(monkeypatch, tmp_path):
    """a1's program check read the judged step's out.npy with a plain np.load: a header
    claiming 4 TiB was allocated in the trusted runner. Read header first, as a2-a6 do."""
    from autograder import judged
    from autograder.program import judge_program

    monkeypatch.setattr(judged, "run_judged", lambda *a, **k: judged.Judged(
        {"ran": True}, {"out.npy": _huge_header()}, {}, ""))
    a1 = load_grader(REPO / "instructor" / "a1_tensor_expressions" / "grader.py")
    ok, message, _ = judge_program(a1.case("conv2d_a"), "unused", tmp_path)
    assert not ok and "[1099511627776]" in message, message
