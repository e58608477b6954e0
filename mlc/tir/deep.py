"""``retry_deeper``: run a walk of the IR again, on a deep stack, when it ran out of depth.

The passes and code generators walk the IR recursively, one Python call per level. A te
program of hundreds of stages lowers to as many allocations nested one inside the other
(each intermediate lives around the rest of the program), more levels than Python's default
recursion limit of 1000 allows. Rather than rewrite every visitor as a loop, a walk that
raises ``RecursionError`` is run once more on a thread of its own whose stack is large
(``STACK_BYTES``, reserved, not used until touched) under a higher recursion limit
(``DEPTH``); the usual programs never pay for it. What is still too deep there raises
``RecursionError`` again, and the caller turns it into its own typed error.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

STACK_BYTES = 1 << 30  # the deep thread's stack: 1 GiB of address space
DEPTH = 200_000  # Python's recursion limit while it runs (the default is 1000)

_lock = threading.Lock()  # one deep walk at a time: the recursion limit is process-wide
_WORKER = "mlc-deep-walk"


def retry_deeper(fn: Callable[[], T]) -> T:
    """``fn()``; if it raises ``RecursionError``, ``fn()`` once more on a thread with a
    ``STACK_BYTES`` stack and a recursion limit of ``DEPTH``. ``fn`` must not have changed
    anything before it ran out of depth (a pass builds a new program and returns it)."""
    try:
        return fn()
    except RecursionError:
        if threading.current_thread().name == _WORKER:
            raise  # already on the deep stack (a walk inside a walk): nothing deeper to try
    return _on_deep_stack(fn)


def _on_deep_stack(fn: Callable[[], T]) -> T:
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as err:  # handed to the caller's thread as it is
            outcome["error"] = err

    with _lock:
        limit = sys.getrecursionlimit()
        worker = None
        for stack in (STACK_BYTES, STACK_BYTES // 8):  # less where memory is limited
            previous = threading.stack_size(stack)
            try:
                worker = threading.Thread(target=run, name=_WORKER, daemon=True)
                sys.setrecursionlimit(max(limit, DEPTH * stack // STACK_BYTES))
                worker.start()
                break
            except RuntimeError:  # no room for the stack (a sandbox's address-space limit)
                sys.setrecursionlimit(limit)
                worker = None
            finally:
                threading.stack_size(previous)
        if worker is None:
            raise RecursionError("no room for a deeper stack")
        try:
            worker.join()
        finally:
            sys.setrecursionlimit(limit)
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
