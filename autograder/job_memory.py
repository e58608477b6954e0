"""One memory limit for all the processes of a job: a memory cgroup per job.

``RLIMIT_AS`` (set in :mod:`autograder._sandbox_exec`) limits each process on its own, so a
notebook that forks 200 children of 3 GiB each stays within it and still takes the machine's
memory from the classmates graded beside it (``--jobs N``), or has the kernel's OOM killer
pick the grader. Where the grader may make a memory cgroup (as root, cgroup v1's ``memory``
hierarchy or cgroup v2 with the memory controller), each job gets one, the job's first
process joins it before anything else runs, every process it starts is in it, and the kernel
stops the job's largest process when the job's processes together pass the limit.

Where no cgroup can be made (an ordinary user without delegation, a container without the
controller), :meth:`JobMemory.create` returns None and the job runs with the per-process limit
only; the job's status says which (``job_memory``), and ``python -m autograder doctor`` shows it.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

_MOUNTS = Path("/proc/self/mountinfo")
_OWN = Path("/proc/self/cgroup")


def _hierarchies() -> list[tuple[int, Path]]:
    """``(version, folder)`` where this process's memory cgroup lives: v1 ``memory`` first,
    then v2; the folder of this process's own cgroup in each (children may be made there
    when the cgroup was delegated) and the hierarchy's root."""
    try:
        mounts = _MOUNTS.read_text().splitlines()
        own = _OWN.read_text().splitlines()
    except OSError:
        return []
    v1 = v2 = None
    for line in mounts:
        fields = line.split()
        if " - " not in line:
            continue
        after = line.split(" - ", 1)[1].split()
        if len(after) < 3:
            continue
        fstype, options = after[0], after[2].split(",")
        if fstype == "cgroup" and "memory" in options and v1 is None:
            v1 = Path(fields[4])
        elif fstype == "cgroup2" and v2 is None:
            v2 = Path(fields[4])
    paths = {}
    for line in own:
        parts = line.split(":", 2)
        if len(parts) == 3:
            if "memory" in parts[1].split(","):
                paths[1] = parts[2]
            elif parts[0] == "0":
                paths[2] = parts[2]
    found: list[tuple[int, Path]] = []
    for version, root in ((1, v1), (2, v2)):
        if root is None:
            continue
        mine = root / paths.get(version, "/").lstrip("/")
        found += [(version, folder) for folder in dict.fromkeys([mine, root])]
    return found


class JobMemory:
    """A memory cgroup for one job (see the module docstring)."""

    def __init__(self, version: int, path: Path, limit_bytes: int) -> None:
        self.version = version
        self.path = path
        self.limit_bytes = limit_bytes

    @classmethod
    def create(cls, name: str, limit_bytes: int) -> JobMemory | None:
        """A new cgroup ``name`` limited to ``limit_bytes`` of memory (swap included where
        the kernel counts it); None where none can be made here."""
        for version, parent in _hierarchies():
            path = parent / name
            try:
                path.mkdir()
            except OSError:
                continue
            job = cls(version, path, limit_bytes)
            try:
                job._limit()
                return job
            except OSError:
                job.remove()
        return None

    def _limit(self) -> None:
        if self.version == 1:
            (self.path / "memory.limit_in_bytes").write_text(str(self.limit_bytes))
            swap = self.path / "memory.memsw.limit_in_bytes"
            if swap.exists():
                try:  # memory + swap: a job cannot page its way past the limit
                    swap.write_text(str(self.limit_bytes))
                except OSError:
                    pass
        else:
            (self.path / "memory.max").write_text(str(self.limit_bytes))
            swap = self.path / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")

    @property
    def procs_file(self) -> str:
        """Write a process id here to put that process (and what it starts) in the job."""
        return str(self.path / "cgroup.procs")

    def oom_kills(self) -> int:
        """How many of the job's processes the kernel stopped for the job's memory limit."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            text = (self.path / name).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0  # a kernel too old to count them

    def remove(self) -> None:
        """Kill what is left in the cgroup and remove it."""
        for _ in range(50):
            try:
                pids = [int(p) for p in Path(self.procs_file).read_text().split()]
            except (OSError, ValueError):
                pids = []
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)
