"""Stopping a long native call: Jupyter's interrupt (SIGINT) while compiled code runs.

Python runs its SIGINT handler (which raises ``KeyboardInterrupt``) only between bytecodes,
so a 20-second kernel used to finish before the interrupt took effect. Now:

1. The code generator makes the outermost loop of each nest check a flag of the module,
   ``@__mlc_interrupt``, once per iteration (a load and a branch) and leave the loop when it
   is set (``CodeGenLLVM._polls``; a parallel loop's threads check it in their own part).
2. Around a call in the main thread, :func:`guard` installs a small C handler for SIGINT
   (:mod:`mlc.runtime.native`) that sets the flag and then calls Python's own handler.
3. The loops stop within one outer iteration, the call returns, and ``KeyboardInterrupt``
   is raised. **The outputs of an interrupted call are invalid**: the Module fills every
   floating-point output with NaN (an integer output keeps what was written so far).

Installing the handler costs two system calls (about a microsecond), so a call is armed
only when it may be long: the first call of a module, every call of a module with
symbolic sizes or scalar parameters, and any call whose previous call took at least
:data:`ARM_AFTER_S`; once a call of a module of constant sizes took less, the module is
never armed again (its calls take as long every time).

Only the main thread can be interrupted (Python delivers signals there); in other threads
a call just runs. A SIGINT handler of the program's own (``signal.signal(signal.SIGINT,
...)``, or SIG_IGN) is left alone: only Python's default one, which raises
``KeyboardInterrupt`` (and which Jupyter installs while a cell runs), stops the loops.
"""

from __future__ import annotations

import _signal  # signal.getsignal's C function: signal.getsignal wraps it in an enum lookup
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mlc.runtime import native, parallel
from mlc.runtime.args import written_params

INTERRUPT_FLAG = "__mlc_interrupt"
"""The flag's name in every compiled module whose loops check it."""

ARM_AFTER_S = 1e-3
"""A call of a constant-size module is armed when the previous call took at least this."""

_MAIN = threading.main_thread().ident
_depth = [0]  # armed calls in progress on the main thread (a packed function may nest them)
SUPPORTED = sys.platform.startswith("linux")  # the handler fills in glibc's struct sigaction


def _after_fork() -> None:
    """A child forked from another thread: that thread is the child's main thread."""
    global _MAIN
    _MAIN = threading.main_thread().ident
    _depth[0] = 0


os.register_at_fork(after_in_child=_after_fork)


def flag_address(engine: Any) -> int:
    """The address of a compiled module's ``@__mlc_interrupt`` (0: its loops never check)."""
    lookup = getattr(engine, "get_global_value_address", None)
    try:
        return int(lookup(INTERRUPT_FLAG)) if lookup is not None else 0
    except (RuntimeError, ValueError, TypeError):
        return 0


def message(name: str) -> str:
    return (f"{name} was interrupted while it ran (SIGINT, Jupyter's stop button): its "
            "outputs are invalid (floating-point outputs were filled with NaN, integer ones "
            "hold what was written so far); call it again to compute them")


def guard(cfunc: Callable[..., None], flag: int, name: str, *, always_arm: bool,
          uses_threads: bool) -> Callable[..., None]:
    """``cfunc`` (the native function) made interruptible from the main thread, and warned
    about once when it runs serially in a forked child (:mod:`mlc.runtime.parallel`)."""
    if not SUPPORTED:
        flag = 0
    if not flag and not uses_threads:
        return cfunc
    helpers = native.helpers()
    arm, disarm = helpers.arm, helpers.disarm
    lock = threading.Lock()  # an armed call and another thread's call never overlap
    last = [float("inf")]
    short = [not flag]  # never armed again: the leanest path
    clock = time.perf_counter
    # the handler is checked on every armed call: signal.getsignal converts its answer to an
    # enum by raising and catching ValueError (1.7 us of a 2.5 us overhead); the C one: 30 ns
    getsignal, SIGINT, default_handler = _signal.getsignal, signal.SIGINT, \
        signal.default_int_handler

    def call(*args: Any) -> None:
        if uses_threads and parallel.SERIAL_AFTER_FORK:
            parallel.warn_serial_after_fork(name)
        if short[0]:
            cfunc(*args)
            return
        if threading.get_ident() != _MAIN:
            with lock:  # the flag is the module's: the main thread's interrupt is not ours
                cfunc(*args)
            return
        if (_depth[0] or (not always_arm and last[0] < ARM_AFTER_S)
                or getsignal(SIGINT) is not default_handler):
            start = clock()
            cfunc(*args)
            last[0] = clock() - start
            return
        with lock:
            start = clock()
            armed = arm(flag)
            _depth[0] += 1
            interrupted = False
            try:
                cfunc(*args)
            except KeyboardInterrupt:  # Python's handler, once the call returned
                interrupted = True
            finally:
                _depth[0] -= 1
                if armed and disarm():  # the loops stopped (a custom handler may not raise)
                    interrupted = True
                last[0] = clock() - start
                # constant sizes take as long on every call: a short one stays short
                short[0] = not always_arm and last[0] < ARM_AFTER_S and not interrupted
        if interrupted:
            raise KeyboardInterrupt(message(name))

    call.__wrapped__ = cfunc  # type: ignore[attr-defined]
    return call


def invalidate(arrays: Any) -> None:
    """Fill the floating-point arrays among ``arrays`` with NaN (an interrupted call's
    outputs); anything else is left as it is."""
    for a in arrays:
        if isinstance(a, np.ndarray) and a.dtype.kind in "fc" and a.flags.writeable:
            a.fill(np.nan)


def output_positions(func: Any) -> tuple[int, ...]:
    """Positions in the call's argument list of the buffers ``func`` stores into."""
    written = {id(func.params[k]) for k in written_params(func)}
    return tuple(pos for pos, arg in enumerate(func.arguments) if id(arg) in written)
