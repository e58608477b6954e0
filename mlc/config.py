"""Configuration switches, read from the environment in this one place.

=================  ===============================================================
``MLC_TRACE=1``    print the loop IR after every lowering pass (``mlc.lower``)
``MLC_DEBUG=1``    run the IR verifier after every lowering pass
``MLC_NUM_THREADS`` threads for ``parallel`` loops (default: all cores)
=================  ===============================================================

The functions read the environment each time they are called, so a notebook can set
``os.environ["MLC_TRACE"] = "1"`` and see the effect on the next call.
"""

from __future__ import annotations

import os

_TRUE = {"1", "true", "yes", "on"}


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def trace() -> bool:
    """True when ``MLC_TRACE`` is set: lowering prints the IR after each pass."""
    return _flag("MLC_TRACE")


def debug() -> bool:
    """True when ``MLC_DEBUG`` is set: lowering verifies the IR after each pass."""
    return _flag("MLC_DEBUG")


def num_threads() -> int:
    """Threads for parallel loops: ``MLC_NUM_THREADS`` if set to a positive integer, else the
    number of cores this process may use."""
    value = os.environ.get("MLC_NUM_THREADS", "").strip()
    if value:
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n > 0:
            return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)
