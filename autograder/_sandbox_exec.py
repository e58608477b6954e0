"""Enter the sandbox, then exec a command: ``python -m autograder._sandbox_exec CONFIG -- CMD...``.

Run by :mod:`autograder.sandbox` (never by hand). In order:

1. new namespaces: mount, PID, IPC and network (as root), plus a user namespace when the
   grader is not root (an ordinary user gets the same walls from the kernel's unprivileged
   namespaces);
2. the file system, in the new mount namespace only:

   * everything is remounted read-only;
   * ``/tmp``, ``/var/tmp``, ``/dev/shm``, the grader's home and the folder holding every
     job's folder are covered by empty private tmpfs mounts (one job never sees another's
     files), and so is ``/run`` (no daemon's socket can be reached);
   * the *keep* paths are bound back in: the job's folder read-write; the interpreter, its
     libraries and the repository read-only. A private folder on the way (``/root`` holding
     ``/root/.pyenv``) is covered by an empty tmpfs into which only the kept paths are bound,
     so any number of them can live under one private folder;
   * each *hide* path (the tests, the output folder) is covered by an empty unreadable mount;

3. in the new PID namespace the first child becomes PID 1, mounts its own ``/proc`` (the job
   sees only its own processes) and, when it exits, takes every process of the job with it;
4. resource limits; every capability dropped (the bounding and ambient sets first, while
   that is allowed; then, as root, the switch to the job's own unprivileged user id, which
   empties the rest; in a user namespace an explicit ``capset`` to nothing);
5. a seccomp filter: the job cannot make Unix-domain sockets (a daemon's socket anywhere it
   can see would otherwise be reachable: a read-only mount does not stop a connect());
6. a JSON line on the status pipe saying which protections are active, then exec.

Before all of these, the process joins the job's memory cgroup when the grader made one
(:mod:`autograder.job_memory`): one memory limit for every process of the job.

Whatever the operating system refuses is reported on the status pipe, never hidden: the grader
decides whether grading may go on (see :func:`autograder.sandbox.preflight`).
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import resource
import signal
import socket
import stat
import struct
import sys
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000
CLONE_NEWIPC = 0x08000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
SYS_MOUNT_SETATTR = 442  # x86_64 and aarch64 share the number
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
O_PATH = getattr(os, "O_PATH", 0o10000000)

SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")  # private and writable in every job
# empty in every job: where the machine's daemons listen (docker, the system bus, each user's
# session under /run/user/UID, whose bus has the systemd user manager run any command). A
# read-only mount does not stop a connect() to a Unix socket.
RUNTIME = ("/run", "/var/run")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _mount(libc: ctypes.CDLL, source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    def enc(s: str | None) -> bytes | None:
        return None if s is None else s.encode()

    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source or ''} on {target}: {os.strerror(err)}")


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        ifreq = struct.pack("16sH14s", b"lo", 0, b"\0" * 14)
        flags = struct.unpack("16sH14s", fcntl.ioctl(sock, SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b"\0" * 14))


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _private_ancestor(path: str, uid: int | None) -> str | None:
    """The shallowest folder above ``path`` that user ``uid`` may not pass through."""
    if uid is None:
        return None
    parts = [p for p in path.split("/") if p]
    for depth in range(1, len(parts)):
        current = "/" + "/".join(parts[:depth])
        st = os.stat(current)
        if st.st_uid != uid and not st.st_mode & 0o001:
            return current
    return None


def _readonly_root(libc: ctypes.CDLL) -> bool:
    """Make every mount of this namespace read-only (one call on Linux >= 5.12)."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, b"/", AT_RECURSIVE, ctypes.byref(attr),
                    ctypes.sizeof(attr)) == 0:
        return True
    ok = True  # older kernels: remount each mount point read-only, one by one
    with open("/proc/self/mountinfo") as f:
        targets = [line.split()[4] for line in f]
    for target in targets:
        target = target.encode().decode("unicode_escape")
        try:
            _mount(libc, None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        except OSError:
            ok = ok and target.startswith(("/proc", "/sys"))
    return ok


def _filesystem(libc: ctypes.CDLL, config: dict[str, Any], status: dict[str, Any]) -> None:
    """Read-only everything, private scratch and job folders, kept paths bound back, hiding."""
    uid = config.get("uid")
    keep: list[tuple[str, bool, int]] = []  # path, writable, O_PATH descriptor
    for path, mode in config.get("keep", []):
        real = os.path.realpath(path)
        if os.path.exists(real) and all(real != k[0] for k in keep):
            keep.append((real, mode == "rw", os.open(real, O_PATH)))
    covers = [*SCRATCH, *RUNTIME, *config.get("cover", [])]
    covers += [a for a in (_private_ancestor(k[0], uid) for k in keep) if a]
    covers = sorted({os.path.realpath(c) for c in covers if os.path.isdir(c)} - {"/"},
                    key=lambda c: c.count("/"))
    covers = [c for i, c in enumerate(covers) if not any(_under(c, d) for d in covers[:i])]

    hide = [p for p in config.get("hide", []) if os.path.exists(p)]  # as the grader sees them
    status["readonly_root"] = _readonly_root(libc)
    for cover in covers:
        scratch = cover in SCRATCH
        mode = "1777" if scratch else "755"
        _mount(libc, "tmpfs", cover, "tmpfs", MS_NOSUID | MS_NODEV,
               f"mode={mode},size={config.get('scratch_mb', 256) if scratch else 1}m")
    status["private_tmp"] = "/tmp" in covers
    status["private_run"] = "/run" in covers or not os.path.isdir("/run")
    for path, writable, fd in sorted(keep, key=lambda k: k[0].count("/")):
        inside = [c for c in covers if _under(path, c) and c != path]
        if not writable and not inside and status["readonly_root"]:
            continue  # already visible, and read-only with everything else
        if inside:
            _make_mountpoint(path, inside[0], fd)
        _mount(libc, f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        _mount(libc, None, path, None, MS_REMOUNT | MS_BIND | (0 if writable else MS_RDONLY))
        os.close(fd)
    for cover in covers:
        if cover not in SCRATCH:  # the tmpfs that only holds mount points: read-only too
            _mount(libc, None, cover, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    hidden = []
    for path in hide:
        if os.path.exists(path):  # else it lies under a cover (/run, the home) already
            _mount(libc, "tmpfs", path, "tmpfs", MS_RDONLY, "size=4k,mode=000")
        hidden.append(path)
    status["hidden"] = hidden


def _make_mountpoint(path: str, cover: str, fd: int) -> None:
    """Create ``path`` (and the folders above it, mode 755) inside the tmpfs at ``cover``."""
    parent = os.path.dirname(path)
    os.makedirs(parent, mode=0o755, exist_ok=True)
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.makedirs(path, mode=0o755, exist_ok=True)
    elif not os.path.exists(path):
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))


def _map_ids(uid: int, gid: int) -> None:
    """In a new user namespace, be the same user as outside (and nobody else)."""
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")


def _namespaces(libc: ctypes.CDLL, config: dict[str, Any], status: dict[str, Any]) -> bool:
    """Create the namespaces and the file system view; return True when a PID namespace is
    new (the caller must fork to enter it)."""
    root = os.geteuid() == 0
    # IPC: System V shared memory and semaphores belong to the namespace, not to a process;
    # in the machine's, a job's segments outlived it (and all other jobs could attach them)
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC
    if config.get("no_network", True):
        flags |= CLONE_NEWNET
    if not root:
        flags |= CLONE_NEWUSER
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        status["error"] = f"namespaces refused: unshare: {os.strerror(err)}"
        return False
    if not root:
        _map_ids(uid, gid)
        status["user_ns"] = True
    status["mount_ns"] = status["pid_ns"] = status["ipc_ns"] = True
    status["net_ns"] = bool(flags & CLONE_NEWNET)
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    _filesystem(libc, config, status)
    if status["net_ns"]:
        _loopback_up()
    return True


def _limits(config: dict[str, Any]) -> None:
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


# seccomp: the job may not make Unix-domain sockets (socket(AF_UNIX, ...) fails with EACCES).
# A read-only file system does not stop a connect(): a daemon's socket anywhere the job can see
# (a database's in /var/lib, an agent's in a visible folder) could be reached. socketpair(),
# pipes and TCP on loopback (the kernel's own ZMQ channels) are untouched.
_SECCOMP_ARCH = {  # machine: (AUDIT_ARCH_*, __NR_socket)
    "x86_64": (0xC000003E, 41),
    "aarch64": (0xC00000B7, 198),
}
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


def _seccomp_program(arch: int, socket_nr: int) -> bytes:
    """BPF over ``struct seccomp_data`` (nr at 0, arch at 4, args[0] at 16): a foreign
    architecture's calls (a 32-bit ``int 0x80``) and x32 numbers fail, socket(AF_UNIX) fails
    with EACCES, everything else is allowed."""
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, errno_ = 0x7FFF0000, 0x00050000

    def op(code: int, jt: int, jf: int, k: int) -> bytes:
        return struct.pack("HBBI", code, jt, jf, k)

    return b"".join([
        op(ld, 0, 0, 4),                # arch
        op(jeq, 1, 0, arch),            # ours: go on
        op(ret, 0, 0, errno_ | 1),      # another architecture's call: EPERM
        op(ld, 0, 0, 0),                # syscall number
        op(jge, 4, 0, 0x40000000),      # x32 numbers: refused
        op(jeq, 0, 2, socket_nr),       # socket(): look at the family
        op(ld, 0, 0, 16),               # args[0], low 32 bits
        op(jeq, 1, 0, 1),               # AF_UNIX: refused
        op(ret, 0, 0, allow),
        op(ret, 0, 0, errno_ | 13),     # EACCES
    ])


def _no_unix_sockets(libc: ctypes.CDLL | None) -> bool:
    """Install the filter above for this process and all it starts; False where it cannot
    be (another architecture, a kernel without seccomp)."""
    import platform

    known = _SECCOMP_ARCH.get(platform.machine())
    if libc is None or known is None:
        return False
    program = _seccomp_program(*known)
    buffer = ctypes.create_string_buffer(program, len(program))

    class _Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = _Fprog(len(program) // 8, ctypes.addressof(buffer))
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return bool(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) == 0)


SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAP_VERSION_3 = 0x20080522


def _drop_bounding_set(libc: ctypes.CDLL | None) -> None:
    """Empty the capability bounding and ambient sets (needs CAP_SETPCAP: before the uid
    switch). No later exec can then give this process or its children a capability back."""
    if libc is None:
        return
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:
            break  # EINVAL: past the kernel's last capability
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


def _clear_capabilities(libc: ctypes.CDLL | None) -> None:
    """``capset`` to nothing (effective, permitted, inheritable): what a user namespace's
    first process still holds after the uid switch (root's switch empties them itself)."""
    import platform

    nr = SYS_CAPSET.get(platform.machine())
    if libc is None or nr is None:
        return
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    libc.syscall(nr, header, data)


def capabilities() -> dict[str, int]:
    """This process's capability sets and flags as ``/proc/self/status`` shows them
    (``CapEff``, ``CapPrm``, ``CapBnd``, ``CapAmb``, ``CapInh`` as numbers)."""
    found: dict[str, int] = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.startswith("Cap"):
                    found[key] = int(value.strip(), 16)
    except (OSError, ValueError):
        pass
    return found


def _no_capabilities() -> bool:
    caps = capabilities()
    return bool(caps) and not any(caps.get(k, 1) for k in ("CapEff", "CapPrm", "CapBnd",
                                                            "CapAmb", "CapInh"))


def _join_job_memory(procs_file: str | None) -> bool:
    """Put this process, first of the job, in the job's memory cgroup: every process the
    job starts is in it too (see autograder/job_memory.py). False where there is none."""
    if not procs_file:
        return False
    try:
        with open(procs_file, "w") as f:
            f.write(str(os.getpid()))
        return True
    except OSError:
        return False


def _report(config: dict[str, Any], status: dict[str, Any]) -> None:
    fd = config.get("status_fd")
    if fd is None:
        return
    try:
        os.write(fd, (json.dumps(status) + "\n").encode())
    finally:
        os.close(fd)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m autograder._sandbox_exec CONFIG.json -- CMD...", file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        config = json.load(f)
    cmd = argv[2:]
    libc = _libc()
    parent = config.get("parent_pid")
    if libc is not None and parent:
        # The grader dies (a Dask worker killed mid-job): this job dies with it, never an
        # orphan running on. SIGTERM, whose handler below kills the whole PID namespace.
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            return 125
    status: dict[str, Any] = {"root": os.geteuid() == 0, "mount_ns": False, "pid_ns": False,
                              "ipc_ns": False, "net_ns": False, "user_ns": False,
                              "private_proc": False, "private_tmp": False, "private_run": False,
                              "readonly_root": False, "hidden": [], "uid": None,
                              "job_memory": _join_job_memory(config.get("cgroup_procs"))}
    new_pid_ns = False
    if libc is None:
        status["error"] = "no libc: namespaces unavailable"
    elif config.get("namespaces", True):
        try:
            new_pid_ns = _namespaces(libc, config, status)
        except OSError as err:
            status["error"] = f"sandbox set-up failed: {err}"
            _report(config, status)
            return 126
    if new_pid_ns:
        # The first child is PID 1 of the new namespace: when it exits, the kernel kills every
        # process left in the namespace (a fork bomb included).
        child = os.fork()
        if child != 0:
            for fd in (config.get("status_fd"), *config.get("close_in_parent", [])):
                if fd is not None:
                    os.close(fd)
            signal.signal(signal.SIGTERM, lambda *_: os.kill(child, signal.SIGKILL))
            _, wait_status = os.waitpid(child, 0)
            return os.waitstatus_to_exitcode(wait_status)
        assert libc is not None
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        try:
            _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            status["private_proc"] = True
        except OSError as err:
            status["error"] = f"cannot mount a private /proc: {err}"
    _limits(config)
    uid = config.get("uid")
    # the job keeps no capability; only the trusted runner as root without a job uid (it
    # starts jobs of its own) keeps them
    drop = uid is not None or not status["root"]
    if drop:
        _drop_bounding_set(libc)
    if status["root"] and uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        status["uid"] = uid
    if drop:
        _clear_capabilities(libc)
    status["no_capabilities"] = drop and _no_capabilities()
    try:
        os.chdir(config["cwd"])
    except OSError as err:
        status["error"] = f"the job cannot enter its folder {config['cwd']}: {err}"
        _report(config, status)
        return 126
    status["no_unix_sockets"] = config.get("namespaces", True) and _no_unix_sockets(libc)
    _report(config, status)
    try:
        os.execvpe(cmd[0], cmd, config["env"])
    except OSError as err:
        print(f"sandbox: cannot run {cmd[0]}: {err}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
