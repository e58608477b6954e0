"""Run an untrusted command in a sandbox: limits, a private directory, no network.

:func:`run_sandboxed` starts ``python -m autograder._sandbox_exec`` (which sets up the
namespaces and limits and then execs the command) in a new session, waits with a wall-clock
limit, and afterwards kills whatever the command left behind. When the grader runs as root,
each job runs under its own unprivileged user id, which is what makes the process limit hold
and the repository read-only for the student's code.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.job_memory import JobMemory

_UID_BASE = 200_000
_uid_lock = threading.Lock()
_uids_in_use: set[int] = set()


@dataclass
class Limits:
    """Resource limits for one sandboxed run (None: no limit)."""

    wall_s: float = 120.0
    cpu_s: int | None = 120
    memory_bytes: int | None = 4 << 30
    file_bytes: int | None = 256 << 20
    nproc: int | None = 256
    disk_bytes: int | None = 1 << 30  # what the job's folder may hold, all files together
    disk_files: int | None = 20_000  # and how many files and folders
    no_network: bool = True
    hide: list[str] = field(default_factory=list)


def is_root() -> bool:
    return os.geteuid() == 0


def acquire_uid() -> int | None:
    """A user id no other job of this process uses (root only; None otherwise)."""
    if not is_root():
        return None
    with _uid_lock:
        uid = _UID_BASE + (os.getpid() % 100_000) * 64
        while uid in _uids_in_use:
            uid += 1
        _uids_in_use.add(uid)
        return uid


def release_uid(uid: int | None) -> None:
    if uid is None:
        return
    kill_uid(uid)
    with _uid_lock:
        _uids_in_use.discard(uid)


def kill_uid(uid: int, rounds: int = 5) -> None:
    """Kill every process owned by ``uid`` (root only), in rounds, until none is left."""
    for _ in range(rounds):
        found = False
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    os.kill(int(entry), signal.SIGKILL)
                    found = True
            except (OSError, ProcessLookupError):
                continue
        if not found:
            return


def prepare_dir(path: Path, uid: int | None) -> None:
    """Give the sandbox directory (recursively) to the sandbox user, private to it."""
    if uid is None:
        return
    for root, dirs, files in os.walk(path):
        os.chown(root, uid, uid)
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)
    os.chmod(path, 0o700)


def job_owner(uid: int | None) -> int:
    """The user id that owns what a job writes: its own uid as root, else the grader's."""
    return uid if uid is not None else os.getuid()


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot start on this machine, or lacks a protection that grading needs.

    Raised before anyone is graded (a row of zeros would be a lie); the message says what to
    fix.
    """


@dataclass
class SandboxResult:
    returncode: int
    output: str
    timed_out: bool
    status: dict[str, Any] = field(default_factory=dict)  # protections the job really had
    outcomes: bytes = b""  # what the trusted driver wrote on the outcome pipe
    over_disk: str = ""  # why the job was stopped for filling its folder ("" if it was not)
    over_memory: str = ""  # which memory limit the job's processes together passed ("" if none)


DISK_POLL_S = 0.25


def remove_tree(path: Path | str) -> None:
    """Delete a job's folder, however deep the notebook nested it.

    ``shutil.rmtree`` recurses in Python and raises ``RecursionError`` (not an ``OSError``, so
    ``ignore_errors`` does not help) on a folder nested ~1000 deep, which a notebook makes with
    a three-line loop; ``rm -rf`` walks any depth and never follows links. A folder the job
    made unreadable (mode 000, as its last act) stops ``rm`` when the grader is its owner
    rather than root: what is left is made the owner's again (``chmod -R``, which ignores
    links) and removed, or every such job would leave up to its disk limit behind.
    """
    if os.path.lexists(path):
        _quiet(["rm", "-rf", "--", str(path)])
    if os.path.lexists(path) and not os.path.islink(path):
        _quiet(["chmod", "-R", "u+rwx", "--", str(path)])
        _quiet(["rm", "-rf", "--", str(path)])


def _quiet(cmd: list[str]) -> None:
    subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)


def _entries(path: str) -> list[os.DirEntry[str]]:
    """The entries of ``path``; a folder the job made unreadable (same user, not root) is
    made readable again first."""
    try:
        return list(os.scandir(path))
    except PermissionError:
        os.chmod(path, 0o700)
        return list(os.scandir(path))


def disk_overuse(folder: Path, limits: Limits) -> str:
    """Why ``folder`` holds more than ``limits`` allow ("" when it does not).

    Counts every file and folder under ``folder`` (links are counted, never followed) and the
    space really allocated (a sparse file counts what it occupies). ``RLIMIT_FSIZE`` caps one
    file; this caps them all, so a notebook writing a million small files cannot fill the
    grading machine's disk. The walk stops as soon as a limit is passed.
    """
    max_bytes, max_files = limits.disk_bytes, limits.disk_files
    if max_bytes is None and max_files is None:
        return ""
    used = files = 0
    stack = [str(folder)]
    while stack:
        path = stack.pop()
        try:
            entries = _entries(path)
        except FileNotFoundError:
            continue  # removed while we looked
        except OSError as err:
            # a folder nested past PATH_MAX, or made unreadable: what it holds cannot be
            # counted, so it counts as too much
            return f"the notebook made a folder the grader cannot look into ({err.strerror})"
        for entry in entries:
            files += 1
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError as err:
                return f"the notebook made a file the grader cannot look at ({err.strerror})"
            used += info.st_blocks * 512
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            if max_files is not None and files > max_files:
                return f"the notebook created more than {max_files} files in its folder"
            if max_bytes is not None and used > max_bytes:
                return f"the notebook wrote more than {max_bytes >> 20} MiB to its folder"
    return ""


def keep_paths(extra: list[str] | None = None) -> list[tuple[str, str]]:
    """What a job must reach: the interpreter, its libraries, the repository (read-only)."""
    paths = {os.path.dirname(os.path.realpath(sys.executable)), sys.prefix, sys.base_prefix,
             os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix),
             str(Path(__file__).resolve().parent.parent)}
    paths |= {p for p in sys.path if p and ("site-packages" in p or "dist-packages" in p
                                           or p.endswith(".zip"))}
    return sorted((p, "ro") for p in paths | set(extra or []) if os.path.exists(p))


def run_sandboxed(cmd: list[str], cwd: Path, env: dict[str, str], limits: Limits,
                  uid: int | None = None, cover: list[str] | None = None,
                  outcome_env: str | None = None, namespaces: bool = True,
                  cover_home: bool = True) -> SandboxResult:
    """Run ``cmd`` in ``cwd`` under ``limits``; never raises for what the command does.

    ``cwd`` is the job's folder (the only writable place besides a private ``/tmp``);
    ``cover`` lists folders to show empty (the folder of all jobs, the grader's home). With
    ``outcome_env``, a pipe is handed to the command, its descriptor number in that
    environment variable: what arrives on it is ``SandboxResult.outcomes``.
    """
    nproc = limits.nproc
    if nproc is not None and uid is None:
        # Not root: the limit counts every process of this user, the grader's included.
        nproc += _count_own_processes()
    status_r, status_w = os.pipe()
    outcome_r, outcome_w = os.pipe() if outcome_env else (None, None)
    env = dict(env)
    if outcome_w is not None and outcome_env:
        env[outcome_env] = str(outcome_w)
    home = os.path.expanduser("~") if cover_home else ""
    config = {
        "cpu_s": limits.cpu_s, "memory_bytes": limits.memory_bytes,
        "file_bytes": limits.file_bytes, "nproc": nproc, "no_network": limits.no_network,
        "hide": [str(Path(p).resolve()) for p in limits.hide], "uid": uid,
        "cwd": str(cwd), "env": env, "namespaces": namespaces,
        "keep": [(str(cwd), "rw"), *keep_paths()],
        "cover": [p for p in [*(cover or []), home] if p and p != "/"],
        "status_fd": status_w, "parent_pid": os.getpid(),
        "close_in_parent": [fd for fd in [outcome_w] if fd is not None],
    }
    memory = None
    if limits.memory_bytes is not None and is_root():  # all the job's processes together
        memory = JobMemory.create(f"mlc-job-{os.getpid()}-{uid or 0}-{time.monotonic_ns()}",
                                  limits.memory_bytes)
        config["cgroup_procs"] = memory.procs_file if memory else None
    fd, config_path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(config, f)
    full = [sys.executable, "-m", "autograder._sandbox_exec", config_path, "--", *cmd]
    timed_out = False
    chunks: dict[str, list[bytes]] = {"status": [], "outcomes": []}
    readers = [_reader(status_r, chunks["status"])]
    if outcome_r is not None:
        readers.append(_reader(outcome_r, chunks["outcomes"]))
    with tempfile.TemporaryFile() as out:
        try:
            proc = subprocess.Popen(full, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    env=_grader_env(),
                                    pass_fds=[f for f in (status_w, outcome_w) if f is not None])
        finally:
            for end in (status_w, outcome_w):
                if end is not None:
                    os.close(end)
        over_disk = ""
        deadline = time.monotonic() + limits.wall_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = proc.poll() is None
                break
            try:
                proc.wait(timeout=min(DISK_POLL_S, left))
                break
            except subprocess.TimeoutExpired:
                over_disk = disk_overuse(cwd, limits)
                if over_disk:
                    break
        _kill_group(proc.pid)
        proc.wait()
        if uid is not None:
            kill_uid(uid)
        over_memory = ""
        if memory is not None:
            if memory.oom_kills():
                over_memory = (f"the notebook's processes together used more than "
                               f"{memory.limit_bytes >> 20} MiB (the job's memory limit)")
            memory.remove()
        for reader in readers:
            reader.join(timeout=10)
        os.unlink(config_path)
        out.seek(max(0, out.seek(0, os.SEEK_END) - 200_000))  # the tail: a job may print
        output = out.read().decode("utf-8", "replace")  # up to RLIMIT_FSIZE (256 MiB)
    status: dict[str, Any] = {}
    text = b"".join(chunks["status"]).decode("utf-8", "replace").strip()
    if text:
        try:
            status = json.loads(text.splitlines()[0])
        except ValueError:
            status = {"error": f"unreadable sandbox status {text[:200]!r}"}
    return SandboxResult(proc.returncode, output, timed_out, status,
                         b"".join(chunks["outcomes"]), over_disk, over_memory)


def _reader(fd: int, sink: list[bytes]) -> threading.Thread:
    def run() -> None:
        with os.fdopen(fd, "rb", buffering=0) as f:
            total = 0
            while chunk := f.read(65536):
                total += len(chunk)
                if total <= 16 << 20:  # more than 16 MiB of outcomes is not a notebook
                    sink.append(chunk)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# What each protection means, for `python -m autograder doctor` and the error messages.
PROTECTIONS = {
    "uid": "the job runs under its own unprivileged user id (root only)",
    "mount_ns": "own mount namespace",
    "readonly_root": "the whole file system is read-only to the job",
    "private_tmp": "private /tmp, /var/tmp and /dev/shm; other jobs' folders are invisible",
    "private_run": "empty /run: the machine's daemons (docker, dbus, systemd) cannot be reached",
    "no_unix_sockets": "no Unix-domain sockets (seccomp): no daemon's socket anywhere can be "
                       "reached",
    "pid_ns": "own PID namespace: every process dies with the job",
    "ipc_ns": "own IPC namespace: System V shared memory dies with the job",
    "job_memory": "one memory limit for all the job's processes together (a memory cgroup; "
                  "root only, where the kernel offers one; else each process alone)",
    "private_proc": "own /proc: the job sees only its own processes",
    "net_ns": "no network (loopback only)",
    "user_ns": "user namespace (how an ordinary user gets the walls above)",
    "no_capabilities": "no capability at all (effective, permitted, bounding, ambient): the "
                       "job cannot undo the walls (umount, nsenter) even as root",
}
REQUIRED = ("mount_ns", "readonly_root", "private_tmp", "private_run", "pid_ns", "ipc_ns",
            "private_proc", "net_ns", "no_unix_sockets", "no_capabilities")

_PROBE = """
import json, os, sys
report = {"python": sys.executable}
try:
    import autograder.harness, ipykernel, jupyter_client, nbval, numpy  # noqa: F401
    report["imports"] = "ok"
except Exception as err:
    report["imports"] = f"{type(err).__name__}: {err}"
report["processes_seen"] = len([p for p in os.listdir("/proc") if p.isdigit()])
try:
    open(os.path.join(sys.argv[1], ".autograder-probe"), "w").close()
    report["repository_writable"] = True
except OSError:
    report["repository_writable"] = False
print("AUTOGRADER-PROBE " + json.dumps(report))
"""


@dataclass
class Preflight:
    """What a job started exactly as grading starts one could do, and what it lacked."""

    status: dict[str, Any]
    probe: dict[str, Any]
    problems: list[str]
    output: str

    @property
    def ok(self) -> bool:
        return not self.problems


def required_protections(insecure: bool = False) -> list[str]:
    if insecure:
        return []
    return [*REQUIRED, *(["uid"] if is_root() else [])]


def missing_protections(status: dict[str, Any], insecure: bool = False) -> list[str]:
    return [name for name in required_protections(insecure) if not status.get(name)]


def preflight(insecure: bool = False, hide: list[str] | None = None,
              workroot: Path | None = None) -> Preflight:
    """Start one job as grading does (same user, walls and interpreter) running a probe."""
    repo = str(Path(__file__).resolve().parent.parent)
    run_root = Path(tempfile.mkdtemp(prefix="ag-doctor-", dir=workroot))
    box = run_root / "job"
    box.mkdir()
    uid = acquire_uid()
    try:
        prepare_dir(box, uid)
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(box),
               "PYTHONPATH": repo, "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
        result = run_sandboxed([sys.executable, "-s", "-c", _PROBE, repo], box, env,
                               Limits(wall_s=120.0, hide=list(hide or [])), uid,
                               cover=[str(run_root)])
    finally:
        release_uid(uid)
        remove_tree(run_root)
    probe: dict[str, Any] = {}
    for line in result.output.splitlines():
        if line.startswith("AUTOGRADER-PROBE "):
            probe = json.loads(line.split(" ", 1)[1])
    problems = []
    if result.status.get("error"):
        problems.append(result.status["error"])
    if not probe:
        tail = " / ".join(result.output.strip().splitlines()[-3:]) or "no output"
        who = f"user id {uid}" if uid is not None else "the job"
        problems.append(f"{who} cannot start the grader's Python {sys.executable} in the "
                        f"sandbox ({tail})")
    elif probe.get("imports") != "ok":
        problems.append(f"the job's Python cannot import what grading needs: {probe['imports']}")
    if probe.get("repository_writable"):
        problems.append(f"the job can write into the repository {repo}")
    for name in missing_protections(result.status, insecure):
        problems.append(f"protection missing: {PROTECTIONS[name]}")
    return Preflight(result.status, probe, problems, result.output)


def explain(report: Preflight) -> str:
    """The message for an instructor when grading cannot go on."""
    lines = ["the sandbox cannot grade on this machine:"]
    lines += [f"  - {p}" for p in report.problems]
    lines += [
        "what to do:",
        "  - grade as root in a container (the strongest sandbox), with the grader's Python "
        "where a job user may read it (it is exposed read-only when it is not);",
        "  - as an ordinary user, unprivileged user namespaces must be allowed "
        "(sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1, no AppArmor "
        "restriction);",
        "  - or pass --insecure to grade with resource limits only: the students' code can then "
        "read and change everything your user can (never for real submissions).",
        "`python -m autograder doctor` shows what is active.",
    ]
    return "\n".join(lines)


def _grader_env() -> dict[str, str]:
    """The wrapper itself needs the grader's Python path to import autograder."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root
    return env


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _count_own_processes() -> int:
    uid = os.getuid()
    count = 0
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                continue
    return count
