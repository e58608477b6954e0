"""A determined student against the sandbox: each attack below once gave points or broke a run.

All hostile notebooks are graded in one run (two jobs in parallel), as an instructor would.
Each attack is built so that it *would* score if it worked (forged outcomes with correct
exports, a classmate's correct export behind a link, a right answer only if a secret leaks),
so a zero here means the wall held. As root (CI) each job also has its own user id; the last
test grades the same notebooks again as an ordinary user (``nobody``), whose walls come from
unprivileged user namespaces.
"""

from __future__ import annotations

import csv
import os
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import copy, variant

from autograder.cases import load_grader
from autograder.cli import main
from autograder.sandbox import is_root, preflight, remove_tree

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
INNER = "AUTOGRADER_TEST_AS_USER"  # set in the run as an ordinary user
NOBODY = 65534

# Cell 0 of a blank notebook: right answers from numpy, then every way to claim that the test
# and export cells passed, then the kernel exits so that no real cell ever runs.
FORGE = """
import glob, json, os
import numpy as np
ex = os.environ["AUTOGRADER_EXCHANGE"]
def answer(case, x):
    if case == "add_hidden":
        return x[0] + 0.5 * x[1]
    e = np.exp(x[0] - x[0].max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
for case in ["add_hidden", "softmax_hidden", "softmax_wide"]:
    meta = json.load(open(f"{ex}/inputs/{case}.json"))
    data = np.load(f"{ex}/inputs/{case}.npz")
    np.save(f"{ex}/exports/{case}.npy", answer(case, [data[n] for n in meta["names"]]))
lines = "".join(json.dumps({"cell": i, "outcome": "passed", "message": ""}) + "\\n"
                for i in range(100))
targets = [os.environ.get("AUTOGRADER_CELL_LOG", ""), "cells.jsonl", "../cells.jsonl"]
targets += glob.glob("/proc/*/fd/*")  # the driver's pipe, if it could be reached
forged = []
for target in targets:
    try:
        with open(target, "a") as f:
            f.write(lines)
        forged.append(target)
    except (OSError, ValueError):
        pass
print("forged into", forged)
os._exit(0)
"""

# The test's second job: a classmate's folder with a correct export (path given directly).
STEAL = """
import os, shutil
import autograder.harness as h
real_export = h.export
h.export = lambda case, value: None if case == "add_hidden" else real_export(case, value)
exports = os.path.join(os.environ["AUTOGRADER_EXCHANGE"], "exports")
os.symlink("{victim}/add_hidden.npy", os.path.join(exports, "add_hidden.npy"))
try:
    os.link("{victim}/add_hidden.npy", os.path.join(exports, "hard.npy"))
except OSError as err:
    print("no hard link:", err)
"""
STEAL_FOLDER = """
import os, shutil
import autograder.harness as h
h.export = lambda case, value: None
exports = os.path.join(os.environ["AUTOGRADER_EXCHANGE"], "exports")
shutil.rmtree(exports)
os.symlink("{victim}", exports)
"""
FIFO = """
import os
import autograder.harness as h
real_export = h.export
h.export = lambda case, value: None if case == "add_hidden" else real_export(case, value)
os.mkfifo(os.path.join(os.environ["AUTOGRADER_EXCHANGE"], "exports", "add_hidden.npy"))
"""
# Correct answers only if a secret leaks: another process's command line (/proc) or a file in
# the machine's /tmp. The student's wrong functions are the fallback.
SNOOP = """
import glob, os
import numpy as np
seen_proc = False
for path in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        seen_proc |= b"{marker}" in open(path, "rb").read()
    except OSError:
        pass
seen_tmp = os.path.exists("{tmp_secret}")
open("/tmp/left-by-{marker}", "w").write("hello")
print("proc", seen_proc, "tmp", seen_tmp)
def add_scaled(a, b, alpha):
    return a + alpha * b if seen_proc else a
def row_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) if seen_tmp else x
"""
TRUSTED = """
import os
os.makedirs("trusted/exports", exist_ok=True)
os.symlink("/", "trusted/root")
open("trusted/exports/add_hidden.npy", "w").write("not an array")
"""
# Folders nested past PATH_MAX (the grader's walk cannot follow them, shutil.rmtree dies of
# RecursionError on them), then files without end: the job is stopped and its folder deleted.
DEEP = """
import itertools, os
for _ in range(1500):
    os.mkdir("dd"); os.chdir("dd")
for n in itertools.count():
    open(f"f{n}", "w").write("x")
"""


@pytest.fixture(scope="module")
def world(demo):
    """A classmate's finished job, a secret process and a secret file, all outside the job."""
    base = Path(tempfile.mkdtemp(prefix="ag-isolation-"))
    os.chmod(base, 0o755)
    victim = base / "classmate" / "job" / "exchange" / "exports"
    victim.mkdir(parents=True)
    case = load_grader(demo["tests"] / "demo_numpy" / "grader.py").case("add_hidden")
    np.save(victim / "add_hidden.npy", case.expected())
    for folder in [victim, *victim.parents][:4]:
        os.chmod(folder, 0o755)
    os.chmod(victim / "add_hidden.npy", 0o644)
    marker = "agmarker" + secrets.token_hex(6)
    tmp_secret = Path("/tmp") / f"ag-secret-{marker}"
    tmp_secret.write_text("the answer")
    os.chmod(tmp_secret, 0o644)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)", marker])
    yield {"victim": victim, "marker": marker, "tmp_secret": tmp_secret}
    proc.kill()
    proc.wait()
    tmp_secret.unlink()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def graded(demo, world, tmp_path_factory):
    subs = tmp_path_factory.mktemp("subs")
    sol, blank = demo["solution"], demo["blank"]
    fmt = {"victim": world["victim"], "marker": world["marker"],
           "tmp_secret": world["tmp_secret"]}
    notebooks = [
        copy(sol, subs / "solution.ipynb"),
        copy(blank, subs / "blank.ipynb"),
        variant(blank, subs / "forged.ipynb", insert={1: FORGE}),
        variant(sol, subs / "steal.ipynb", insert={3: STEAL.format(**fmt)},
                replace={2: "def add_scaled(a, b, alpha):\n    return a + alpha * b if "
                         "a.shape == (2, 3) else a"}),
        variant(sol, subs / "steal_folder.ipynb", insert={3: STEAL_FOLDER.format(**fmt)}),
        variant(sol, subs / "fifo.ipynb", insert={3: FIFO}),
        variant(sol, subs / "snoop.ipynb", insert={5: SNOOP.format(**fmt)}),
        variant(sol, subs / "trusted.ipynb", insert={2: TRUSTED}),
        variant(sol, subs / "deep.ipynb", insert={5: DEEP}),
    ]
    out = tmp_path_factory.mktemp("out")
    rc = main(["grade", "--assignment", "demo_numpy", "--tests", str(demo["tests"]), "--out",
               str(out), "--timeout", "10", "--jobs", "2", "--quiet", *map(str, notebooks)])
    with (out / "grades.csv").open() as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    return {"rc": rc, "rows": rows, "out": out}


def scores(graded, student):
    row = graded["rows"][student]
    return float(row["score"]), float(row["t_add"]), float(row["t_softmax"]), row["status"]


def test_the_sandbox_has_every_protection():
    report = preflight()
    assert report.ok, report.problems
    assert report.probe["processes_seen"] <= 2  # the probe itself (and nothing of the host)


def test_solution_full_marks_blank_zero_and_no_aborted_run(graded):
    assert graded["rc"] == 0
    assert scores(graded, "solution") == (5.0, 2.0, 3.0, "ok")
    assert scores(graded, "blank")[0] == 0.0
    assert len(graded["rows"]) == 9


def test_a_notebook_filling_its_folder_is_stopped_and_its_folder_deleted(graded):
    score, _, _, status = scores(graded, "deep")
    assert status == "disk limit"
    feedback = (graded["out"] / "deep" / "feedback.md").read_text()
    assert "cannot look into" in feedback or "cannot look at" in feedback
    assert not list(Path(tempfile.gettempdir()).glob("ag-deep-*"))  # the job's folder is gone


def test_a_forged_cell_log_with_numpy_answers_gets_nothing(graded):
    assert scores(graded, "forged") == (0.0, 0.0, 0.0, "ok")
    feedback = (graded["out"] / "forged" / "feedback.md").read_text()
    assert "kernel died" in feedback or "did not run" in feedback


def test_a_link_to_a_classmates_export_is_refused(graded):
    assert scores(graded, "steal") == (3.0, 0.0, 3.0, "ok")  # softmax is its own work
    assert scores(graded, "steal_folder")[:3] == (0.0, 0.0, 0.0)
    assert scores(graded, "fifo")[:3] == (3.0, 0.0, 3.0)  # a FIFO neither hangs nor scores


def test_proc_and_tmp_show_nothing_of_the_machine_or_other_jobs(graded, world):
    assert scores(graded, "snoop") == (0.0, 0.0, 0.0, "ok")
    assert not (Path("/tmp") / f"left-by-{world['marker']}").exists()


def test_a_trusted_folder_made_by_the_student_changes_nothing(graded):
    assert scores(graded, "trusted") == (5.0, 2.0, 3.0, "ok")


def test_a_grader_failure_is_a_grader_error_row_and_the_run_goes_on(demo, tmp_path,
                                                                    monkeypatch):
    from autograder import grade

    real = grade.collect_exports

    def broken(box, dest, owner, cap=grade.EXPORT_CAP, **kwargs):
        if "victim" in str(dest.parent.parent.name):
            raise FileExistsError("simulated: the grader tripped over something")
        return real(box, dest, owner, cap, **kwargs)

    monkeypatch.setattr(grade, "collect_exports", broken)
    subs = tmp_path / "subs"
    copy(demo["solution"], subs / "victim.ipynb")
    copy(demo["solution"], subs / "other.ipynb")
    out = tmp_path / "out"
    rc = main(["grade", "--assignment", "demo_numpy", "--tests", str(demo["tests"]), "--out",
               str(out), "--timeout", "10", "--quiet", str(subs / "victim.ipynb"),
               str(subs / "other.ipynb")])
    with (out / "grades.csv").open() as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    assert rc == 1
    assert rows["victim"]["status"] == "grader-error"
    assert "FileExistsError" in rows["victim"]["reason"]
    assert rows["other"]["status"] == "ok" and float(rows["other"]["score"]) == 5.0
    assert "not graded" in (out / "victim" / "feedback.md").read_text()


def test_a_sandbox_that_cannot_start_stops_the_run_before_anyone_is_graded(demo, tmp_path,
                                                                          monkeypatch, capsys):
    from autograder import sandbox

    real = sandbox.run_sandboxed

    def refused(*args, **kwargs):
        kwargs["namespaces"] = False  # as if the kernel refused every namespace
        return real(*args, **kwargs)

    monkeypatch.setattr(sandbox, "run_sandboxed", refused)
    copy(demo["solution"], tmp_path / "solution.ipynb")
    out = tmp_path / "out"
    rc = main(["grade", "--assignment", "demo_numpy", "--tests", str(demo["tests"]), "--out",
               str(out), "--quiet", str(tmp_path / "solution.ipynb")])
    assert rc == 3
    assert not (out / "grades.csv").exists()
    err = capsys.readouterr().err
    assert "cannot grade on this machine" in err and "protection missing" in err
    assert main(["doctor", "--skip-reference-check"]) == 3


def test_doctor_reports_the_protections(capsys):
    assert main(["doctor", "--skip-reference-check"]) == 0
    text = capsys.readouterr().out
    assert "[x] own /proc" in text and "grading works" in text


@pytest.mark.skipif(not is_root(), reason="dropping to an ordinary user needs root")
@pytest.mark.skipif(bool(os.environ.get(INNER)), reason="this is the ordinary user's run")
def test_again_as_an_ordinary_user():
    """The same attacks, graded by ``nobody``: the walls come from user namespaces."""
    # The user's home outside /tmp (as a real home is), so that the walls around it are tested
    # rather than /tmp's.
    home = Path(tempfile.mkdtemp(prefix="ag-as-user-", dir="/run" if os.path.isdir("/run")
                                 else None))
    try:
        os.chown(home, NOBODY, NOBODY)
        os.chmod(home, 0o755)
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home),
               INNER: "1", "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8",
               "PYTHONPATH": str(REPO)}
        cmd = [sys.executable, str(HERE / "as_user.py"), str(NOBODY), "--", sys.executable,
               "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
               f"--basetemp={home}/t", str(Path(__file__)), str(HERE / "test_sandbox.py")]
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=900)
        print(proc.stdout[-5000:], proc.stderr[-3000:])
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
        assert " passed" in proc.stdout
    finally:
        remove_tree(home)  # shutil.rmtree dies of RecursionError on a deep folder


def test_exports_are_only_regular_files_of_the_job(tmp_path):
    from autograder.grade import collect_exports

    exports = tmp_path / "job" / "exchange" / "exports"
    exports.mkdir(parents=True)
    (exports / "ok.npy").write_bytes(b"x" * 10)
    (exports / "big.npy").write_bytes(b"x" * 100)
    (exports / "link.npy").symlink_to(exports / "ok.npy")
    os.link(exports / "big.npy", exports / "hard.npy")
    os.mkfifo(exports / "fifo.npy")
    dest = tmp_path / "dest"
    dest.mkdir()
    refused = collect_exports(tmp_path / "job", dest, os.getuid(), cap=50)
    assert sorted(p.name for p in dest.iterdir()) == ["ok.npy"]
    assert set(refused) == {"big.npy", "link.npy", "hard.npy", "fifo.npy"}
    assert "link" in refused["link.npy"] and "hard link" in refused["hard.npy"]
    dest2 = tmp_path / "dest2"
    dest2.mkdir()
    assert collect_exports(tmp_path / "job", dest2, os.getuid() + 1, cap=50)["ok.npy"] == (
        "not written by this job")
    assert stat.S_ISDIR(os.lstat(exports).st_mode)
