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
from dataclasses import dataclass, field
from pathlib import Path

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
    no_network: bool = True
    hide: list[str] = field(default_factory=list)


@dataclass
class SandboxResult:
    returncode: int
    output: str
    timed_out: bool


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


def reclaim_dir(path: Path) -> None:
    """Make the sandbox directory readable by the grader again (root: chown back)."""
    if not is_root():
        return
    for root, dirs, files in os.walk(path):
        os.chown(root, 0, 0)
        for name in dirs + files:
            os.chown(os.path.join(root, name), 0, 0, follow_symlinks=False)


def run_sandboxed(cmd: list[str], cwd: Path, env: dict[str, str], limits: Limits,
                  uid: int | None = None) -> SandboxResult:
    """Run ``cmd`` in ``cwd`` under ``limits``; never raises for what the command does."""
    nproc = limits.nproc
    if nproc is not None and uid is None:
        # Not root: the limit counts every process of this user, the grader's included.
        nproc += _count_own_processes()
    config = {
        "cpu_s": limits.cpu_s, "memory_bytes": limits.memory_bytes,
        "file_bytes": limits.file_bytes, "nproc": nproc, "no_network": limits.no_network,
        "hide": [str(Path(p).resolve()) for p in limits.hide], "uid": uid,
        "cwd": str(cwd), "env": env,
        "expose": sorted({os.path.realpath(sys.executable), sys.prefix, sys.base_prefix,
                          os.path.realpath(sys.base_prefix)}),
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
        config_path = f.name
    os.chmod(config_path, 0o600)
    full = [sys.executable, "-m", "autograder._sandbox_exec", config_path, "--", *cmd]
    timed_out = False
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(full, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                env=_grader_env())
        try:
            proc.wait(timeout=limits.wall_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        _kill_group(proc.pid)
        proc.wait()
        if uid is not None:
            kill_uid(uid)
        os.unlink(config_path)
        out.seek(0)
        output = out.read()[-200_000:].decode("utf-8", "replace")
    return SandboxResult(proc.returncode, output, timed_out)


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
