"""Speed is timed on a quiet machine: while a speed case is timed, no other job of the grader
runs on the same machine.

The machine's timing lock (:func:`mlc.tune.executor.timing_lock`, an ``flock`` on
``/tmp/mlc-timing.lock``) makes timings take turns, but a notebook graded beside a timing
(``--jobs 2``, or two Dask workers on one machine) ran on at full speed: a notebook that
spins in a loop moved a classmate's ratio by 0.3 either way (a parallel reference loses a
core, a serial student schedule does not). Niceness does not help: every job is a session of
its own, hence a scheduler autogroup of its own, and autogroups share the CPUs evenly
whatever the niceness inside them.

So the jobs (notebook runs, untimed trusted checks) and the timings share a second lock,
``<timing lock>.jobs``, as readers and writer: a job holds it shared while it runs and takes
it only between timings (holding the timing lock for a moment), so a timing that is waiting
lets no new job start; a timing holds the timing lock, then the jobs lock exclusively, so it
begins once the jobs that were running have ended. Every grader process on the machine
(threads of ``--jobs N``, Dask workers) takes the same two files.

The timing itself reads the CPU clock of one pinned thread (:mod:`autograder.replay`), so
load from outside the grader (another user, a build) no longer moves a ratio much; the locks
still keep the grader's own jobs off the caches and the sibling core while it times.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

from mlc import config
from mlc.tune.executor import timing_lock


def jobs_lock_path() -> str:
    return config.timing_lock_path() + ".jobs"


@contextlib.contextmanager
def _flock(path: str, how: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)
    try:
        with contextlib.suppress(OSError):  # another user's file: flock works read-only
            os.fchmod(fd, 0o666)
        fcntl.flock(fd, how)
        yield
    finally:
        os.close(fd)  # closing drops the lock


@contextlib.contextmanager
def job_running() -> Iterator[None]:
    """Run a job (a notebook, an untimed check) beside other jobs, never beside a timing."""
    with contextlib.ExitStack() as stack:
        with timing_lock():  # no timing running or waiting: join the jobs now
            stack.enter_context(_flock(jobs_lock_path(), fcntl.LOCK_SH))
        yield


@contextlib.contextmanager
def machine_to_itself() -> Iterator[None]:
    """Time with no job of the grader running: new jobs wait, running ones are waited for."""
    with timing_lock(), _flock(jobs_lock_path(), fcntl.LOCK_EX):
        yield
