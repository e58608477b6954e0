"""One memory limit for all the processes of a job (autograder/job_memory.py): RLIMIT_AS
limits each process alone, so a notebook forking children that each stay under it could
take the machine's memory from the jobs beside it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from autograder.job_memory import JobMemory
from autograder.sandbox import Limits, acquire_uid, is_root, prepare_dir, release_uid, run_sandboxed

# four children of 160 MiB each: every one under the 400 MiB per-process limit, together
# 640 MiB, past the job's 400 MiB
FORKING_HOG = """
import os, time
children = []
for n in range(4):
    pid = os.fork()
    if pid == 0:
        block = bytearray(160 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(3)
        os._exit(0)
    children.append(pid)
codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
print("children", codes)
"""


def _cgroups_here() -> bool:
    probe = JobMemory.create(f"mlc-probe-{os.getpid()}", 1 << 30) if is_root() else None
    if probe is None:
        return False
    probe.remove()
    return True


needs_cgroup = pytest.mark.skipif(
    not _cgroups_here(), reason="needs root and a kernel memory cgroup (this machine has none)")


def _run(code: str, tmp_path: Path, memory: int) -> object:
    box = tmp_path / "job"
    box.mkdir()
    uid = acquire_uid()
    try:
        prepare_dir(box, uid)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(box)}
        return run_sandboxed([sys.executable, "-s", "-c", code], box, env,
                             Limits(wall_s=60, memory_bytes=memory), uid, cover=[str(tmp_path)])
    finally:
        release_uid(uid)


@needs_cgroup
def test_children_together_past_the_jobs_memory_are_stopped(tmp_path):
    result = _run(FORKING_HOG, tmp_path, 400 << 20)
    assert result.status["job_memory"] is True
    assert "-9" in result.output  # a child was killed (SIGKILL) by the kernel
    assert result.over_memory == (
        "the notebook's processes together used more than 400 MiB (the job's memory limit)")


@needs_cgroup
def test_a_job_within_its_memory_is_left_alone_and_its_cgroup_removed(tmp_path):
    result = _run("print(len(bytearray(50 << 20)))", tmp_path, 400 << 20)
    assert result.returncode == 0 and "52428800" in result.output
    assert result.status["job_memory"] is True and result.over_memory == ""
    leftovers = [p for p in Path("/sys/fs/cgroup").rglob(f"mlc-job-{os.getpid()}-*")]
    assert leftovers == []


def test_where_no_cgroup_can_be_made_the_job_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(JobMemory, "create", classmethod(lambda cls, name, limit: None))
    result = _run("print('ran')", tmp_path, 400 << 20)
    assert "ran" in result.output
    assert result.status["job_memory"] is False and result.over_memory == ""
