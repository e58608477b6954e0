"""Enter the sandbox, then exec a command: ``python -m autograder._sandbox_exec CONFIG -- CMD...``.

Run by :mod:`autograder.sandbox` (never by hand). In order:

1. when root: a new mount namespace in which every path of ``hide`` is covered by an empty,
   unreadable tmpfs (the tests directory, the grader's output directory), a new network
   namespace with only the loopback interface up (the Jupyter kernel talks to nbval over
   127.0.0.1; nothing else is reachable), and a new PID namespace, so that when the command
   ends every process it left behind dies with it;
2. resource limits: CPU seconds, address space, file size, processes;
3. when root: drop to the unprivileged ``uid`` (so the process limit is enforced and nothing
   outside the sandbox directory is writable);
4. exec the command.

Each step that the operating system refuses is skipped silently: on a laptop without root
the limits still apply.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import resource
import signal
import socket
import struct
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000
MS_RDONLY = 1
MS_BIND = 4096
MS_MOVE = 8192
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
PR_SET_PDEATHSIG = 1


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        ifreq = struct.pack("16sH14s", b"lo", 0, b"\0" * 14)
        flags = struct.unpack("16sH14s", fcntl.ioctl(sock, SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b"\0" * 14))


def _expose(libc: ctypes.CDLL, path: str) -> None:
    """Make ``path`` reachable by the unprivileged user, in this mount namespace only.

    If a directory on the way is private (``/root`` when Python lives in ``/root/.pyenv``),
    it is covered by an empty tmpfs that others may traverse, and the one child on the way is
    moved back in: nothing else of the private directory becomes visible.
    """
    parts = [p for p in os.path.realpath(path).split("/") if p]
    for depth in range(len(parts) - 1):
        current = "/" + "/".join(parts[: depth + 1])
        if os.stat(current).st_mode & 0o001:
            continue
        child = current + "/" + parts[depth + 1]
        stage = f"/tmp/.autograder-stage-{os.getpid()}"
        os.makedirs(stage, exist_ok=True)
        if libc.mount(child.encode(), stage.encode(), None, MS_BIND | MS_REC, None) != 0:
            return
        libc.mount(b"tmpfs", current.encode(), b"tmpfs", 0, b"size=4k,mode=755")
        os.mkdir(child)
        libc.mount(stage.encode(), child.encode(), None, MS_MOVE, None)
        os.rmdir(stage)


def _namespaces(libc: ctypes.CDLL, config: dict) -> bool:
    """Set up mount, network and PID namespaces; return True when a PID namespace is new."""
    if libc.unshare(CLONE_NEWNS) == 0:
        libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
        if config.get("uid") is not None:
            for path in config.get("expose", []):
                try:
                    _expose(libc, path)
                except OSError:
                    pass
        for path in config.get("hide", []):
            if os.path.exists(path):
                libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_RDONLY, b"size=4k,mode=000")
    if config.get("no_network", True) and libc.unshare(CLONE_NEWNET) == 0:
        try:
            _loopback_up()
        except OSError:
            pass
    return libc.unshare(CLONE_NEWPID) == 0


def _limits(config: dict) -> None:
    def setlimit(which: int, value: int | None) -> None:
        if value is None:
            return
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass

    setlimit(resource.RLIMIT_CPU, config.get("cpu_s"))
    setlimit(resource.RLIMIT_AS, config.get("memory_bytes"))
    setlimit(resource.RLIMIT_FSIZE, config.get("file_bytes"))
    setlimit(resource.RLIMIT_CORE, 0)
    setlimit(resource.RLIMIT_NPROC, config.get("nproc"))


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m autograder._sandbox_exec CONFIG.json -- CMD...", file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        config = json.load(f)
    cmd = argv[2:]
    libc = _libc()
    is_root = os.geteuid() == 0
    new_pid_ns = False
    if is_root and libc is not None:
        new_pid_ns = _namespaces(libc, config)
    if new_pid_ns:
        # The first child is PID 1 of the new namespace: when it exits, the kernel kills every
        # process left in the namespace (a fork bomb included).
        child = os.fork()
        if child != 0:
            signal.signal(signal.SIGTERM, lambda *_: os.kill(child, signal.SIGKILL))
            _, status = os.waitpid(child, 0)
            return os.waitstatus_to_exitcode(status)
        if libc is not None:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    _limits(config)
    uid = config.get("uid")
    if is_root and uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    os.chdir(config["cwd"])
    try:
        os.execvpe(cmd[0], cmd, config["env"])
    except OSError as err:
        print(f"sandbox: cannot run {cmd[0]}: {err}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
