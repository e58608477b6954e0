"""The thread pool behind ``parallel`` loops: libgomp, GCC's OpenMP runtime.

Compiled ``parallel`` loops call ``GOMP_parallel`` (see :mod:`mlc.target.llvm.parallel`), so
the library must be loaded into this process before a module that uses it is compiled. It is
looked up the way the system linker would (``libgomp.so.1``), then in the copies that the
xgboost and scikit-learn wheels ship. Without it, parallel loops run serially, and mlc says
so once.
"""

from __future__ import annotations

import ctypes.util
import glob
import os
import warnings
from importlib import util as import_util

import llvmlite.binding as llvm

_state: dict[str, object] = {}
SPIN_COUNT = 50_000


def _candidates() -> list[str]:
    found: list[str] = []
    name = ctypes.util.find_library("gomp")
    if name:
        found.append(name)
    for package in ("xgboost", "sklearn"):
        spec = import_util.find_spec(package) if _importable(package) else None
        if spec is None or not spec.submodule_search_locations:
            continue
        for location in spec.submodule_search_locations:
            site = os.path.dirname(location)
            for folder in (
                os.path.join(location, "lib"),
                *glob.glob(os.path.join(site, f"{package}*.libs")),
                *glob.glob(os.path.join(site, "scikit_learn*.libs")),
            ):
                found.extend(sorted(glob.glob(os.path.join(folder, "libgomp*.so*"))))
    return found


def _importable(package: str) -> bool:
    try:
        return import_util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def libgomp() -> str | None:
    """Load libgomp into the process (once) and return its path, or None when missing."""
    if "path" in _state:
        return _state["path"]  # type: ignore[return-value]
    # After a parallel loop the threads wait for the next one by spinning (GOMP_SPINCOUNT),
    # then sleep. Sleeping at once (OMP_WAIT_POLICY=passive) or soon (5,000-20,000 spins)
    # made each loop wake its threads through the kernel, which often put the woken thread
    # on the caller's CPU; both then shared one CPU until the next tick's rebalancing, by
    # which time the loop was over: a 1.3 ms convolution took 3.0 ms on two threads (2.4 on
    # one) in half the batches. Spinning through the gap between loops keeps each thread on
    # its own CPU: 50,000 spins (about 2 ms here) gave 1.25 ms in every batch. libgomp's
    # own default, 300,000, would take a CPU from whatever a notebook runs next (numpy,
    # xgboost) for ~10 ms after each call. A user's OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", str(SPIN_COUNT))
    path: str | None = None
    for candidate in _candidates():
        try:
            llvm.load_library_permanently(candidate)
        except RuntimeError:
            continue
        path = candidate
        break
    _state["path"] = path
    return path


def available(warn: bool = True) -> bool:
    """Is the parallel runtime loaded? When not, warn once that loops run serially."""
    if libgomp() is not None:
        return True
    if warn and not _state.get("warned"):
        _state["warned"] = True
        warnings.warn(
            "libgomp (the OpenMP runtime) was not found, so parallel loops run serially. "
            "Install GCC's libgomp (apt install libgomp1) or the xgboost wheel, which ships it.",
            RuntimeWarning,
            stacklevel=3,
        )
    return False
