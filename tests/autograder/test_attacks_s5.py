"""A hostile student against the grader's trusted side: what the grader itself does with what
a notebook leaves behind. Each attack here once worked:

* an export the grader could not parse (an empty ``.npy``, JSON nested past the recursion
  limit, ``Infinity`` as a node number, a trace that is not text) raised in the grader: the
  row became ``grader-error``, blaming the grader, and the student's other tests went
  ungraded;
* sparse files in the exports folder (a 64 MiB ``truncate`` costs the job no disk) were
  copied in full, as zeros, onto the grading machine's disk: 256 of them are 16 GiB;
* a graph export evaluated in the grader's own process, with no limit: a few KiB of JSON
  (a padded input, then thousands of 16 MiB ops) took the grader's memory and time;
* a code cell whose source is ``null`` (nbformat reads it) made a ``grader-error`` row;
* a submission named ``...ipynb`` is student ``..``: its feedback was written beside the
  output folder;
* as an ordinary user, a folder that a forked process kept at mode 000 until the end was
  left behind after grading (``rm -rf`` as its owner cannot enter it), up to 1 GiB a job;
* with the grader's ``$TMPDIR`` outside ``/tmp`` (a cluster's scratch), the jobs graded
  beside were visible in the folder above the job's, and as an ordinary user (one user id
  for every job) a classmate's export could be read and handed in;
* System V shared memory that a job made outlived it (the IPC namespace was the machine's):
  4096 segments as large as the memory limit would hold the machine's memory for good;
* a job could connect() to the daemons' Unix sockets in ``/run`` (a read-only mount does not
  stop it): docker, the system bus, and, as an ordinary user, the grader's own session bus
  in ``/run/user/UID``, whose systemd user manager runs any command outside the sandbox;
* a notebook that spins ran beside a classmate's speed timing (``--jobs 2``, or two Dask
  workers on one machine): the timing lock kept timings apart, not notebooks, and a spinning
  notebook moved the classmate's ratio by 0.3 either way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import variant

from autograder.cases import load_grader, replay_export, run_plain
from autograder.grade import GradingConfig, grade_or_error, grade_submission
from autograder.sandbox import is_root, remove_tree

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
INNER = "AUTOGRADER_TEST_AS_USER"  # set in the run as an ordinary user
NOBODY = 65534
A3 = load_grader(REPO / "autograder" / "tests" / "a3_fusion" / "grader.py")
A4 = load_grader(REPO / "autograder" / "tests" / "a4_tuning" / "grader.py")

# The add test's export replaced by an empty file (np.load raises EOFError on it); the
# softmax test is the student's own work and must still count.
EMPTY_EXPORT = """
import os
import autograder.harness as h
real_export = h.export
h.export = lambda case, value: None if case == "add_hidden" else real_export(case, value)
open(os.path.join(os.environ["AUTOGRADER_EXCHANGE"], "exports", "add_hidden.npy"), "wb").close()
"""
# Sparse files: each 64 MiB long, none of it on the job's disk.
SPARSE = """
import os
exports = os.path.join(os.environ["AUTOGRADER_EXCHANGE"], "exports")
for n in range(8):
    with open(os.path.join(exports, f"zeros{n}.npy"), "wb") as f:
        f.truncate(64 << 20)
"""

NESTED = "[" * 200_000 + "]" * 200_000  # json.loads: RecursionError, not ValueError


def grade_one(demo, tmp_path, name: str, cell: str, at: int = 3) -> tuple[object, Path]:
    """Grade the demo solution with ``cell`` inserted; keep the grader's folders to look at."""
    notebook = variant(demo["solution"], tmp_path / "subs" / f"{name}.ipynb", insert={at: cell})
    work = tmp_path / "work"
    work.mkdir()
    result = grade_submission(notebook, GradingConfig("demo_numpy", tests_root=demo["tests"],
                                                      cell_timeout=10), workroot=work, keep=True)
    (run_root,) = work.iterdir()
    return result, run_root


def test_an_unreadable_array_export_fails_its_test_not_the_grader(demo, tmp_path):
    result, _ = grade_one(demo, tmp_path, "empty", EMPTY_EXPORT)
    assert result.status == "ok", result.reason
    assert [(t.id, t.score) for t in result.tests] == [("t_add", 0.0), ("t_softmax", 3.0)]
    assert "hidden test add_hidden: failed" in result.tests[0].feedback()


def test_sparse_exports_are_not_copied_onto_the_graders_disk(demo, tmp_path):
    result, run_root = grade_one(demo, tmp_path, "sparse", SPARSE)
    assert result.score == 5.0
    copied = sum(p.stat().st_size for p in (run_root / "trusted" / "exports").iterdir())
    assert copied < 1 << 20, f"{copied >> 20} MiB of the job's exports copied"


@pytest.mark.parametrize("export", [
    NESTED,
    json.dumps({"text": 5}),  # a trace that is not text
    json.dumps({"text": [["get_block", {"name": "C"}, ["b0"]]]}),
])
def test_an_unreadable_trace_export_is_a_zero_with_a_reason(tmp_path, export):
    (tmp_path / "exports").mkdir()
    (tmp_path / "exports" / "gemm_speed.json").write_text(export)

    def never(cmd, cwd):
        raise AssertionError("an unreadable trace must not be replayed")

    report, why = replay_export("gemm_speed", tmp_path / "exports", tmp_path, never,
                                lambda trace, out: [])
    assert report is None and "cannot be read" in why


@pytest.mark.parametrize("case_id, text", [
    ("fuse_mlp", NESTED),
    ("fuse_mlp", '{"groups": [[Infinity]]}'),  # int(inf): OverflowError
    ("fold_mlp", NESTED),
])
def test_an_unreadable_graph_export_is_a_zero_with_a_reason(tmp_path, case_id, text):
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / f"{case_id}.json").write_text(json.dumps({"text": text}))
    fraction, message = A3.case(case_id).check_export(
        exports, grader_path=A3.path, workdir=tmp_path, run_trusted=run_plain)
    assert fraction == 0.0 and message


def test_a4s_space_check_reads_a_nested_trace_without_raising(tmp_path):
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "tuned_speed.json").write_text(json.dumps({"text": NESTED}))
    fraction, message = A4.case("tuned_speed").check_export(
        exports, grader_path=A4.path, workdir=tmp_path, run_trusted=run_plain)
    assert fraction == 0.0 and "sampling" in message


def test_nested_json_in_the_whole_export_file_is_a_zero(tmp_path):
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "fuse_mlp.json").write_text(NESTED)
    fraction, message = A3.case("fuse_mlp").check_export(
        exports, grader_path=A3.path, workdir=tmp_path, run_trusted=run_plain)
    assert fraction == 0.0 and "cannot be read" in message
    assert os.path.exists(exports / "fuse_mlp.json")


def test_the_exports_the_grader_reads_are_capped_together(tmp_path):
    from autograder.grade import collect_exports

    exports = tmp_path / "job" / "exchange" / "exports"
    exports.mkdir(parents=True)
    for name in ("a.npy", "a.json", "b.npy", "other.npy"):
        with open(exports / name, "wb") as f:
            f.truncate(40)  # sparse: no disk for the job, 40 bytes for the grader
    dest = tmp_path / "dest"
    dest.mkdir()
    refused = collect_exports(tmp_path / "job", dest, os.getuid(), cap=50,
                              names=["a.json", "a.npy", "b.json", "b.npy"], total_cap=100)
    assert sorted(p.name for p in dest.iterdir()) == ["a.json", "a.npy"]
    assert refused == {"b.npy": "the exports together are larger than 100 bytes"}


def test_a_graph_export_is_evaluated_under_the_jobs_limits_not_in_the_grader(tmp_path):
    """fold_mlp's input padded to 2048 x 2048, then 100 ops on it: 1.6 GB of values from
    4 KiB of JSON (5000 such ops would be 80 GB, in the grader's own process)."""
    from autograder import grade

    case = A3.case("fold_mlp")
    nodes = [json.loads(case.params["graph"])["nodes"][0]]  # the input x, (4, 16)
    nodes.append({"kind": "call", "op": "pad", "args": [0],
                  "attrs": {"pad_width": [[0, 2044], [0, 2032]]}})
    for _ in range(100):
        nodes.append({"kind": "call", "op": "negative", "args": [len(nodes) - 1], "attrs": {}})
    text = json.dumps({"nodes": nodes, "inputs": [0], "outputs": [len(nodes) - 1]})
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "fold_mlp.json").write_text(json.dumps({"text": text}))
    config = GradingConfig("a3_fusion", cell_timeout=10, memory_bytes=1 << 30)
    ran: list[list[str]] = []

    def trusted(cmd, cwd):
        ran.append(cmd)
        return grade._run_trusted(cmd, cwd, config)

    fraction, message = case.check_export(exports, grader_path=A3.path, workdir=tmp_path,
                                          run_trusted=trusted)
    assert ran, "the graph was evaluated in the grader's own process"
    assert fraction == 0.0 and "MemoryError" in message, message


# A notebook that spins for four seconds, as a hog beside a classmate's timing would, and
# says when (its folder is kept: grade_submission(keep=True)).
SPIN = """
import time
open("started", "w").write(repr(time.time()))
end = time.time() + 4
while time.time() < end:
    pass
open("ended", "w").write(repr(time.time()))
"""
# What a speed replay would do, with stamps: it runs in the trusted folder.
TIMED = """
import sys, time
print("timed from", repr(time.time()))
open("timing", "w").close()
time.sleep(float(sys.argv[1]))
print("timed until", repr(time.time()))
"""


def _stamp(text: str, label: str) -> float:
    return float(text.split(label + " ")[1].split()[0])


def _wait_for(pattern: str, root: Path) -> Path:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        found = list(root.glob(pattern))
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"nothing matched {pattern} under {root}")


@pytest.fixture
def machine(demo, tmp_path, monkeypatch):
    """A private timing lock, a spinning notebook, and the grader's trusted runner."""
    from autograder import grade

    monkeypatch.setenv("MLC_TIMING_LOCK", str(tmp_path / "timing.lock"))
    notebook = variant(demo["solution"], tmp_path / "subs" / "spin.ipynb", insert={3: SPIN})
    work = tmp_path / "work"
    work.mkdir()
    trusted = tmp_path / "trusted"
    trusted.mkdir()
    config = GradingConfig("demo_numpy", tests_root=demo["tests"], cell_timeout=30)

    def timed(seconds: float) -> str:
        rc, out = grade._run_trusted([sys.executable, "-c", TIMED, str(seconds)], trusted,
                                     config, timed=True)
        assert rc == 0, out
        return out

    def notebook_job():
        return grade_submission(notebook, config, work, keep=True)

    return {"work": work, "trusted": trusted, "timed": timed, "notebook": notebook_job}


def test_a_speed_timing_waits_for_a_running_notebook(machine):
    with ThreadPoolExecutor(1) as pool:
        job = pool.submit(machine["notebook"])
        _wait_for("*/job/started", machine["work"])
        out = machine["timed"](0)
        assert job.result().score == 5.0
    ended = float(_wait_for("*/job/ended", machine["work"]).read_text())
    assert _stamp(out, "timed from") > ended, "the timing ran beside a spinning notebook"


def test_a_notebook_waits_for_a_speed_timing_in_progress(machine):
    with ThreadPoolExecutor(1) as pool:
        timing = pool.submit(machine["timed"], 4)
        _wait_for("timing", machine["trusted"])
        assert machine["notebook"]().score == 5.0
        out = timing.result()
    started = float(_wait_for("*/job/started", machine["work"]).read_text())
    assert started > _stamp(out, "timed until"), "a notebook ran beside a timing"


def test_a_cell_without_text_makes_the_notebook_unreadable_not_a_grader_error(demo, tmp_path):
    nb = json.loads(demo["solution"].read_text())
    nb["cells"][1]["source"] = None  # nbformat reads it; joining it raised TypeError
    path = tmp_path / "null_source.ipynb"
    path.write_text(json.dumps(nb))
    result = grade_or_error(path, GradingConfig("demo_numpy", tests_root=demo["tests"]))
    assert result.status == "unreadable" and result.score == 0.0
    assert "no text" in result.tests[0].public_message


@pytest.mark.parametrize("name", ["...ipynb", "..ipynb"])
def test_a_submission_named_dots_cannot_write_beside_the_output_folder(demo, tmp_path, name):
    from autograder.cli import main

    (tmp_path / "subs").mkdir()
    submission = tmp_path / "subs" / name  # student "..": feedback in out/../
    submission.write_bytes(demo["solution"].read_bytes())
    out = tmp_path / "grades" / "out"
    rc = main(["grade", "--assignment", "demo_numpy", "--tests", str(demo["tests"]), "--out",
               str(out), "--timeout", "10", "--quiet", str(submission)])
    assert rc == 2
    assert not (tmp_path / "grades" / "feedback.md").exists()
    assert not (out / "feedback.md").exists() and not (out / "results.json").exists()


# A classmate graded beside: their job's folder is a sibling of ours in the grader's working
# folder ($TMPDIR, which on a cluster is often not under /tmp). Copy their export if it shows.
COPY_CLASSMATE = """
import glob, os, shutil
import autograder.harness as h
real_export = h.export
h.export = lambda case, value: None if case == "add_hidden" else real_export(case, value)
workroot = os.path.dirname(os.path.dirname(os.getcwd()))
found = glob.glob(os.path.join(workroot, "*", "job", "exchange", "exports", "add_hidden.npy"))
found = [f for f in found if not f.startswith(os.getcwd())]
print("classmates' exports seen:", found)
if found:
    shutil.copyfile(found[0], os.path.join(os.environ["AUTOGRADER_EXCHANGE"], "exports",
                                           "add_hidden.npy"))
"""
WORKROOT_ENV = "AG_S5_WORKROOT"  # set by the ordinary user's run: a folder outside /tmp and home


def test_a_classmates_job_folder_beside_ours_is_invisible(demo, tmp_path):
    import numpy as np

    workroot = Path(os.environ.get(WORKROOT_ENV) or tmp_path) / f"work{os.getpid()}"
    workroot.mkdir()
    exports = workroot / "ag-classmate-x" / "job" / "exchange" / "exports"
    exports.mkdir(parents=True)
    case = load_grader(demo["tests"] / "demo_numpy" / "grader.py").case("add_hidden")
    np.save(exports / "add_hidden.npy", case.expected())
    notebook = variant(demo["solution"], tmp_path / "subs" / "copy.ipynb",
                       insert={3: COPY_CLASSMATE},
                       replace={2: "def add_scaled(a, b, alpha):\n    return a + alpha * b "
                                "if a.shape == (2, 3) else a"})  # right on the public test only
    result = grade_submission(notebook, GradingConfig("demo_numpy", tests_root=demo["tests"],
                                                      cell_timeout=10), workroot=workroot)
    assert [(t.id, t.score) for t in result.tests] == [("t_add", 0.0), ("t_softmax", 3.0)]


# System V shared memory lives in the IPC namespace, not in a process: a segment that a job
# creates and fills outlives it (4096 of them, each as large as the memory limit, would hold
# the machine's memory until someone runs ipcrm).
SHM = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
sid = libc.shmget(int(sys.argv[1]), 1 << 20, 0o1000 | 0o600)  # IPC_CREAT
addr = libc.shmat(sid, None, 0)
ctypes.memset(addr, 7, 1 << 20)
libc.shmdt(ctypes.c_void_p(addr))
print("segment", sid)
"""


def test_shared_memory_a_job_creates_dies_with_it(tmp_path):
    from autograder.sandbox import Limits, acquire_uid, prepare_dir, release_uid, run_sandboxed

    key = 0x5E5000 + os.getpid() % 0x1000
    box = tmp_path / "job"
    box.mkdir()
    uid = acquire_uid()
    try:
        prepare_dir(box, uid)
        result = run_sandboxed([sys.executable, "-s", "-c", SHM, str(key)], box,
                               {"PATH": "/usr/bin:/bin", "HOME": str(box)}, Limits(wall_s=60),
                               uid, cover=[str(tmp_path)])
        assert "segment" in result.output, result.output
        keys = [line.split()[0] for line in Path("/proc/sysvipc/shm").read_text().splitlines()]
        assert str(key) not in keys, "the job's shared memory outlived it"
        assert result.status["ipc_ns"]
    finally:
        release_uid(uid)
        subprocess.run(["ipcrm", "-M", str(key)], capture_output=True, check=False)


# A Unix socket in /run, where the machine's daemons listen: docker, the system bus, and the
# grader's own session under /run/user/UID (its bus asks the systemd user manager to run any
# command, outside every wall, when the job runs under the grader's user id). A read-only
# mount does not stop a connect().
CONNECT = """
import socket, sys
try:
    client = socket.socket(socket.AF_UNIX)
    client.connect(sys.argv[1])
    client.sendall(b"run this outside the sandbox")
    print("connected")
except OSError as err:
    print("refused:", err)
"""


def test_a_job_cannot_reach_the_daemons_sockets_in_run(tmp_path):
    import socket

    from autograder.sandbox import Limits, acquire_uid, prepare_dir, release_uid, run_sandboxed

    where = os.environ.get(WORKROOT_ENV) or ("/run" if os.path.isdir("/run") else None)
    folder = Path(tempfile.mkdtemp(prefix="ag-s5-sock-", dir=where))
    os.chmod(folder, 0o755)
    server = socket.socket(socket.AF_UNIX)
    box = tmp_path / "job"
    box.mkdir()
    uid = acquire_uid()
    try:
        server.bind(str(folder / "daemon.sock"))
        os.chmod(folder / "daemon.sock", 0o777)
        server.listen(1)
        prepare_dir(box, uid)
        result = run_sandboxed([sys.executable, "-s", "-c", CONNECT, str(folder / "daemon.sock")],
                               box, {"PATH": "/usr/bin:/bin", "HOME": str(box)},
                               Limits(wall_s=60), uid, cover=[str(tmp_path)])
    finally:
        release_uid(uid)
        server.close()
        remove_tree(folder)
    assert "refused" in result.output, result.output


@pytest.mark.skipif(not is_root(), reason="dropping to an ordinary user needs root")
@pytest.mark.skipif(bool(os.environ.get(INNER)), reason="this is the ordinary user's run")
def test_again_as_an_ordinary_user():
    """The same attacks, graded by ``nobody`` (walls from user namespaces, jobs under the
    grader's own user id)."""
    where = "/run" if os.path.isdir("/run") else None
    home = Path(tempfile.mkdtemp(prefix="ag-s5-user-", dir=where))
    workroot = Path(tempfile.mkdtemp(prefix="ag-s5-work-", dir=where))  # neither /tmp nor home
    try:
        for folder in (home, workroot):
            os.chown(folder, NOBODY, NOBODY)
            os.chmod(folder, 0o755)
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home),
               INNER: "1", "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8",
               "PYTHONPATH": str(REPO), WORKROOT_ENV: str(workroot)}
        cmd = [sys.executable, str(HERE / "as_user.py"), str(NOBODY), "--", sys.executable,
               "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
               f"--basetemp={home}/t", str(Path(__file__))]
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
        assert " passed" in proc.stdout
    finally:
        remove_tree(home)
        remove_tree(workroot)


# Files in a folder that a process forked off the kernel keeps at mode 000 until the job is
# killed: as an ordinary user (the folder's owner, not root) `rm -rf` could not remove it.
HOARD = """
import os
os.makedirs("hoard/inner", exist_ok=True)
with open("hoard/inner/big", "wb") as f:
    f.write(bytes(8 << 20))
if os.fork() == 0:
    os.setsid()
    while True:
        try:
            os.chmod("hoard", 0)
        except OSError:
            pass
"""


def test_a_folder_the_job_made_unreadable_is_removed_with_the_job(demo, tmp_path):
    notebook = variant(demo["solution"], tmp_path / "subs" / "hoard.ipynb", insert={5: HOARD})
    work = tmp_path / "work"
    work.mkdir()
    result = grade_submission(notebook, GradingConfig("demo_numpy", tests_root=demo["tests"],
                                                      cell_timeout=10), workroot=work)
    assert result.score == 5.0
    assert list(work.iterdir()) == []


def test_remove_tree_removes_an_unreadable_folder_of_its_owner(tmp_path):
    folder = tmp_path / "job" / "hoard"
    (folder / "inner").mkdir(parents=True)
    (folder / "inner" / "f").write_text("x")
    os.chmod(folder, 0)
    remove_tree(tmp_path / "job")
    assert not (tmp_path / "job").exists()


# A daemon's Unix socket anywhere the job can see (a database's in /var/lib, an agent's in a
# folder the job is shown) could be connected to: the read-only file system does not stop a
# connect(), and as an ordinary user the job is the grader to that daemon. Here the socket
# sits in the job's own folder, the one place every job sees in both modes.
def test_a_job_cannot_connect_to_a_unix_socket_it_can_see(tmp_path):
    import socket

    from autograder.sandbox import Limits, acquire_uid, prepare_dir, release_uid, run_sandboxed

    box = tmp_path / "job"
    box.mkdir()
    uid = acquire_uid()
    server = socket.socket(socket.AF_UNIX)
    try:
        prepare_dir(box, uid)
        server.bind(str(box / "daemon.sock"))
        os.chmod(box / "daemon.sock", 0o777)
        server.listen(1)
        code = CONNECT + (
            "a, b = socket.socketpair(); a.sendall(b'x'); print('socketpair', b.recv(1))\n"
            "tcp = socket.socket(socket.AF_INET); tcp.bind(('127.0.0.1', 0)); print('tcp ok')\n"
        )
        result = run_sandboxed([sys.executable, "-s", "-c", code, str(box / "daemon.sock")],
                               box, {"PATH": "/usr/bin:/bin", "HOME": str(box)},
                               Limits(wall_s=60), uid, cover=[str(tmp_path)])
    finally:
        release_uid(uid)
        server.close()
    assert "refused: [Errno 13] Permission denied" in result.output, result.output
    assert "socketpair b'x'" in result.output and "tcp ok" in result.output
    assert result.status["no_unix_sockets"] is True
