"""The sandbox's walls, one by one, with a plain command in place of a notebook.

Runs as root (each job its own user id) and, through ``test_isolation``'s last test, again as
an ordinary user (walls from user namespaces).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.sandbox import (
    Limits,
    acquire_uid,
    is_root,
    prepare_dir,
    release_uid,
    remove_tree,
    run_sandboxed,
)

REPO = Path(__file__).resolve().parents[2]


def run(code: str, tmp: Path, *args: str, uid: bool = True, **kwargs) -> tuple[int, str, dict]:
    box = tmp / "job"
    box.mkdir(exist_ok=True)
    job_uid = acquire_uid() if uid else None
    try:
        prepare_dir(box, job_uid)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(box), "PYTHONPATH": str(REPO)}
        result = run_sandboxed([sys.executable, "-s", "-c", code, *args], box, env,
                               Limits(wall_s=60), job_uid, cover=[str(tmp)], **kwargs)
    finally:
        release_uid(job_uid)
    return result.returncode, result.output, result.status


@pytest.fixture
def tmp(tmp_path):
    os.chmod(tmp_path, 0o700)
    yield tmp_path
    # a job may leave folders nested ~1000 deep: pytest's own clean-up of old temporary
    # folders (shutil.rmtree) would die of RecursionError on them three sessions later
    for child in tmp_path.iterdir():
        remove_tree(child)


def test_the_job_sees_only_its_own_processes(tmp):
    marker = f"agproc{os.getpid()}x"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        rc, out, status = run(
            "import glob, sys\n"
            "marker = sys.argv[1][::-1].encode()  # reversed: our own command line lacks it\n"
            "cmds = [open(p, 'rb').read() for p in glob.glob('/proc/[0-9]*/cmdline')]\n"
            "print('pids', len(cmds), 'marker', any(marker in c for c in cmds))", tmp,
            marker[::-1])
    finally:
        proc.kill()
        proc.wait()
    assert rc == 0, out
    assert status["private_proc"] and status["pid_ns"]
    assert "marker False" in out
    assert int(out.split("pids ")[1].split()[0]) <= 2


def test_tmp_is_private_and_writable(tmp):
    secret = Path(tempfile.mkstemp(prefix="ag-host-secret-", dir="/tmp")[1])
    os.chmod(secret, 0o644)
    left = Path("/tmp") / f"ag-left-{os.getpid()}"
    try:
        rc, out, status = run(
            "import os, sys\n"
            "print('secret', os.path.exists(sys.argv[1]))\n"
            "open(sys.argv[2], 'w').write('x'); open('/dev/shm/x', 'w').write('x')\n"
            "print('tmp', sorted(os.listdir('/tmp')))", tmp, str(secret), str(left))
    finally:
        secret.unlink()
    assert rc == 0, out
    assert "secret False" in out and status["private_tmp"]
    assert not left.exists()


def test_the_file_system_is_read_only_outside_the_jobs_folder(tmp):
    # a folder anyone may write, that is not covered: only the read-only mount protects it
    target = Path.home() / f".ag-open-{os.getpid()}"
    target.mkdir(mode=0o777)
    os.chmod(target, 0o777)
    try:
        rc, out, status = run(
            "import sys\n"
            "for path in [sys.argv[1] + '/f', 'mine']:\n"
            "    try:\n"
            "        open(path, 'w').write('x'); print('wrote', path)\n"
            "    except OSError as err:\n"
            "        print('refused', path, err.strerror)\n", tmp, str(target), cover_home=False)
        assert rc == 0, out
        assert status["readonly_root"]
        assert f"refused {target}/f" in out and "wrote mine" in out
        assert not (target / "f").exists() and (tmp / "job" / "mine").exists()
    finally:
        os.rmdir(target)


def test_hidden_paths_cannot_be_read(tmp):
    secret_dir = Path.home() / f".ag-tests-{os.getpid()}"  # outside /tmp, not covered
    secret_dir.mkdir(mode=0o755)
    try:
        (secret_dir / "grader.py").write_text("SECRET = 1\n")
        os.chmod(secret_dir / "grader.py", 0o644)
        box = tmp / "job"
        box.mkdir()
        env = {"PATH": "/usr/bin:/bin", "HOME": str(box)}
        result = run_sandboxed([sys.executable, "-c", "import sys; print(open(sys.argv[1]).read())",
                                str(secret_dir / "grader.py")], box, env,
                               Limits(wall_s=60, hide=[str(secret_dir)]), None, cover=[],
                               cover_home=False)
    finally:
        import shutil

        shutil.rmtree(secret_dir)
    assert "SECRET" not in result.output
    assert str(secret_dir) in result.status["hidden"]


@pytest.mark.skipif(not is_root(), reason="a private folder hides only from another user id: "
                    "the job runs under the grader's own id when the grader is not root")
def test_two_kept_paths_under_one_private_folder_both_work(tmp):
    private = Path(tempfile.mkdtemp(prefix="ag-private-"))  # mode 0700, root's
    try:
        for name in ("venv-a", "venv-b/site-packages"):
            (private / name).mkdir(parents=True)
            (private / name / "mod.py").write_text(f"NAME = {name!r}\n")
        (private / "secret.txt").write_text("not for students")
        from autograder import sandbox

        extra = [str(private / "venv-a"), str(private / "venv-b" / "site-packages")]
        real = sandbox.keep_paths
        sandbox.keep_paths = lambda more=None: real(extra)
        try:
            rc, out, _ = run(
                "import os, sys\n"
                "for p in sys.argv[1:3]:\n"
                "    print(open(p + '/mod.py').read().strip())\n"
                "print('listing', sorted(os.listdir(sys.argv[3])))\n"
                "try:\n"
                "    open(sys.argv[1] + '/mod.py', 'a')\n"
                "except OSError as err:\n"
                "    print('read-only', err.strerror)\n", tmp, *extra, str(private))
        finally:
            sandbox.keep_paths = real
        assert rc == 0, out
        assert "NAME = 'venv-a'" in out and "NAME = 'venv-b/site-packages'" in out
        assert "listing ['venv-a', 'venv-b']" in out  # secret.txt stays hidden
        assert "read-only" in out
    finally:
        import shutil

        shutil.rmtree(private)


@pytest.mark.skipif(not is_root(), reason="an interpreter in a private home is unreachable only "
                    "for another user id (root's jobs)")
def test_grading_works_with_the_interpreter_under_a_private_home(tmp, demo):
    """The grader's Python is a virtual environment in a 0700 folder, on top of a base Python
    that may itself be in a private home (/root/.pyenv): the solution still gets full marks."""
    import site
    import venv

    private = Path(tempfile.mkdtemp(prefix="ag-home-"))  # 0700, root's
    try:
        venv.EnvBuilder(with_pip=False, symlinks=True).create(private / "venv")
        pure = next(Path(p) for p in site.getsitepackages() if Path(p).is_dir())
        lib = next((private / "venv" / "lib").glob("python*/site-packages"))
        (lib / "course.pth").write_text(f"{pure}\n{REPO}\n")
        python = private / "venv" / "bin" / "python"
        copy_to = tmp / "solution.ipynb"
        copy_to.write_bytes(demo["solution"].read_bytes())
        out = tmp / "out"
        proc = subprocess.run(
            [str(python), "-m", "autograder", "grade", "--assignment", "demo_numpy", "--tests",
             str(demo["tests"]), "--out", str(out), "--timeout", "10", "--quiet", str(copy_to)],
            cwd=REPO, capture_output=True, text=True, timeout=600,
            env={"PATH": "/usr/bin:/bin", "HOME": str(private), "PYTHONPATH": str(REPO)})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "solution,demo_numpy,5,5,ok" in (out / "grades.csv").read_text()
    finally:
        import shutil

        shutil.rmtree(private)


@pytest.mark.parametrize("code, limits, reason", [
    # a million small files: each under RLIMIT_FSIZE, together an exhausted disk
    ("import itertools\nfor n in itertools.count():\n    open(f'f{n}', 'w').write('x')\n",
     Limits(wall_s=60, disk_files=500), "more than 500 files"),
    # big files side by side, each under the per-file cap
    ("import itertools\nfor n in itertools.count():\n"
     "    with open(f'big{n}', 'wb') as f:\n        f.write(bytes(1 << 20)); f.flush()\n",
     Limits(wall_s=60, disk_bytes=8 << 20), "more than 8 MiB"),
    # deep folders (each counts as an entry)
    ("import os\nwhile True:\n    os.mkdir('d'); os.chdir('d')\n",
     Limits(wall_s=60, disk_files=300), "more than 300 files"),
])
def test_a_job_filling_its_folder_is_stopped_with_the_reason(tmp, code, limits, reason):
    box = tmp / "job"
    box.mkdir()
    uid = acquire_uid()
    try:
        prepare_dir(box, uid)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(box)}
        result = run_sandboxed([sys.executable, "-s", "-c", code], box, env, limits, uid,
                               cover=[str(tmp)])
    finally:
        release_uid(uid)
    assert not result.timed_out, result.output
    assert reason in result.over_disk


def test_a_job_within_its_disk_limits_is_not_stopped(tmp):
    rc, out, _ = run("for n in range(50):\n    open(f'f{n}', 'w').write('x' * 1000)\n"
                     "print('wrote 50')", tmp)
    assert rc == 0 and "wrote 50" in out


def test_files_hidden_past_path_max_count_as_too_much():
    """Folders nested past PATH_MAX cannot be walked by path; the watchdog must not be blind,
    and the folder must still be deleted (``shutil.rmtree`` dies of RecursionError on it)."""
    root = Path(tempfile.mkdtemp(prefix="ag-deep-"))
    os.chmod(root, 0o700)
    box = root / "job"
    box.mkdir()
    uid = acquire_uid()
    code = ("import os\nfor _ in range(1500):\n    os.mkdir('dd'); os.chdir('dd')\n"
            "import itertools\nfor n in itertools.count():\n    open(f'f{n}', 'w').write('x')\n")
    try:
        prepare_dir(box, uid)
        result = run_sandboxed([sys.executable, "-s", "-c", code], box,
                               {"PATH": "/usr/bin:/bin", "HOME": str(box)},
                               Limits(wall_s=60, disk_files=100_000), uid, cover=[str(root)])
    finally:
        release_uid(uid)
        remove_tree(root)
    assert not root.exists()
    assert not result.timed_out, result.output
    assert "cannot look" in result.over_disk, result.over_disk
