"""Configuration switches, read from the environment in this one place.

=================  ===============================================================
``MLC_TRACE=1``    print the loop IR after every lowering pass (``mlc.lower``)
``MLC_DEBUG=1``    run the IR verifier after every lowering pass
``MLC_NUM_THREADS`` threads for ``parallel`` loops (default: all cores)
``MLC_PIN_THREADS=1`` run the threads of parallel loops on CPUs of their own
                   (``mlc.runtime.parallel.on_own_cpus``; default: where the OS puts
                   them); read when a module is built
``MLC_THREAD_SPIN_US`` how long (microseconds) an idle thread of a parallel loop waits
                   spinning for the next loop before it sleeps (default 0: sleep at
                   once; ``inf``: never sleep); read when the thread pool starts
                   (``mlc.runtime.parallel``; ``OMP_WAIT_POLICY``/``GOMP_SPINCOUNT``, when
                   set, win)
``MLC_BOUNDS_CHECK=0`` compile without run-time index checks (experts, for timing;
                   ``mlc.build(..., bounds_check=False)`` does the same for one build)
``MLC_TIMING_LOCK`` the file whose ``flock`` makes timings exclusive on a machine (default
                   ``/tmp/mlc-timing.lock``; see ``mlc.tune.executor.timing_lock``)
=================  ===============================================================

The functions read the environment each time they are called, so a notebook can set
``os.environ["MLC_TRACE"] = "1"`` and see the effect on the next call.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import warnings
from collections.abc import Iterator

_TRUE = {"1", "true", "yes", "on"}


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def pin_threads() -> bool:
    """True when ``MLC_PIN_THREADS`` is set: parallel loops' threads run on CPUs of their
    own. Off by default: it made the grader's timing of short kernels less steady here."""
    return _flag("MLC_PIN_THREADS")


THREAD_SPIN_US = 0.0
"""How long idle threads spin before sleeping, unless ``MLC_THREAD_SPIN_US`` says otherwise:
what ``benchmarks/threads.py`` measured best overall (``benchmarks/results/threads.md``).
On the shared 2-vCPU machine the course is built on (load 10-18), every spin lost: a
spinning thread uses up its process's share of the CPU, and the batch-64 MLP took 1.07x
(5 us), 6.5x (20 us), 7.8x (50 us) and 60x (forever) as long as with sleeping threads,
whose wake-up is quick when no CPU is idle. On a quiet machine, where waking a thread means
waking an idle CPU, ``MLC_THREAD_SPIN_US=20`` to ``50`` is worth trying."""


def thread_spin_us() -> float:
    """Microseconds an idle thread of a parallel loop spins before sleeping:
    ``MLC_THREAD_SPIN_US`` (a number >= 0, or ``inf``), else :data:`THREAD_SPIN_US`. Another
    value is ignored with a warning."""
    value = os.environ.get("MLC_THREAD_SPIN_US", "").strip().lower()
    if not value:
        return THREAD_SPIN_US
    try:
        us = float(value)
    except ValueError:
        us = -1.0
    if us >= 0:  # inf too; NaN fails the comparison
        return us
    warnings.warn(f"MLC_THREAD_SPIN_US={value!r} is not a number of microseconds >= 0 (or "
                  f"'inf'); spinning {THREAD_SPIN_US:g} us", stacklevel=2)
    return THREAD_SPIN_US


def trace() -> bool:
    """True when ``MLC_TRACE`` is set: lowering prints the IR after each pass."""
    return _flag("MLC_TRACE")


def debug() -> bool:
    """True when ``MLC_DEBUG`` is set: lowering verifies the IR after each pass."""
    return _flag("MLC_DEBUG")


MAX_THREADS = 1024
"""The most threads a parallel loop gets: libgomp crashed the process (a segmentation fault)
when asked for 100000, past the system's limit on threads."""


def num_threads() -> int:
    """Threads for parallel loops: ``MLC_NUM_THREADS`` if set to a positive integer (at most
    :data:`MAX_THREADS`), else the number of cores this process may use. Another value is
    ignored with a warning."""
    value = os.environ.get("MLC_NUM_THREADS", "").strip()
    if value:
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n > MAX_THREADS:
            warnings.warn(f"MLC_NUM_THREADS={value}: using {MAX_THREADS} threads, the most "
                          "mlc starts", stacklevel=2)
            return MAX_THREADS
        if n > 0:
            return n
        warnings.warn(f"MLC_NUM_THREADS={value!r} is not a positive whole number; using one "
                      "thread per core", stacklevel=2)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


_BOUNDS_CHECK: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "mlc_bounds_check", default=None
)


def bounds_check() -> bool:
    """Do compiled kernels check, while running, the indices that cannot be checked before
    (read from data, over symbolic sizes, under conditions)? On unless ``MLC_BOUNDS_CHECK=0``
    or inside :func:`bounds_checks` ``(False)``. Integer divisors are always checked."""
    override = _BOUNDS_CHECK.get()
    if override is not None:
        return override
    value = os.environ.get("MLC_BOUNDS_CHECK", "").strip().lower()
    return value not in {"0", "false", "no", "off"}


@contextlib.contextmanager
def bounds_checks(enabled: bool | None) -> Iterator[None]:
    """Within the block, :func:`bounds_check` says ``enabled`` (None: leave it as it is)."""
    token = _BOUNDS_CHECK.set(enabled) if enabled is not None else None
    try:
        yield
    finally:
        if token is not None:
            _BOUNDS_CHECK.reset(token)


def timing_lock_path() -> str:
    """The machine-wide timing lock's file: ``MLC_TIMING_LOCK``, else /tmp/mlc-timing.lock."""
    return os.environ.get("MLC_TIMING_LOCK", "").strip() or "/tmp/mlc-timing.lock"
