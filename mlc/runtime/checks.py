"""Errors found by the compiled code itself: integer division by zero, indices out of range.

Compiled code never traps on them (that would kill the notebook's kernel): a failing check
writes its site number and the offending value into the module's error record
``@__mlc_error`` and goes on safely (divisor one, the access skipped). After the call the
Module reads the record and raises a typed error that names the expression and the value::

    IntegerDivisionError: C[i] = A[i] // B[i]: the divisor B[i] was 0 (in the store to C).
    The outputs of this call are partial.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

from mlc.errors import (
    AllocationError,
    IndexOutOfBoundsError,
    IntegerDivisionError,
    RuntimeCheckError,
)
from mlc.runtime import registry

ERROR_RECORD = "__mlc_error"


class ErrorRecord:
    """The two int64s of a compiled module's ``@__mlc_error`` (site, value), cleared before a
    call and read after it. A module without checks has none and costs nothing."""

    def __init__(self, engine: Any, sites: tuple[tuple[str, str, str], ...], name: str,
                 packed: bool = False) -> None:
        self.sites = sites
        self.name = name
        self.slots: Any = None
        self.packed = packed  # calls packed functions: raise what they raised (registry)
        self.lock = threading.RLock()  # one checked call of the module at a time
        if sites:
            address = engine.get_global_value_address(ERROR_RECORD)
            if address:
                self.slots = (ctypes.c_int64 * 2).from_address(address)

    def run(self, fn: Callable[..., None], native: Any) -> None:
        if self.slots is None and not self.packed:
            fn(*native)
            return
        self.wrap(lambda: fn(*native))()

    def wrap(self, call: Callable[[], None]) -> Callable[[], None]:
        """``call`` followed by the check of the record (the call itself if no checks).

        The record is one per module, so two threads calling the module at once would
        clear and read each other's failure (one call returning partial outputs without
        an error): the checked calls of one module take turns (``lock``). A packed function
        may call the module again on the same thread: the lock is re-entrant and the outer
        call's record is put back when the inner call returns."""
        if self.slots is None and not self.packed:
            return call
        record = self

        def checked() -> None:
            slots = record.slots
            if slots is None:  # packed calls, no checks: the registry keeps a record per run
                _packed_call(call)
                return
            with record.lock:
                saved = int(slots[0]), int(slots[1])
                slots[0] = 0
                try:
                    if record.packed:
                        _packed_call(call)
                    else:
                        call()
                    failed = int(slots[0]), int(slots[1])
                finally:
                    slots[0], slots[1] = saved
            if failed[0]:
                record.raise_error(*failed)

        return checked

    def raise_error(self, site: int, value: int) -> None:
        if not 1 <= site <= len(self.sites):
            raise RuntimeCheckError(f"{self.name}: a run-time check failed (site {site})")
        kind, expr, store = self.sites[site - 1]
        where = f" (in the store to {store})" if store else ""
        partial = "The outputs of this call are partial."
        if kind == "allocation":
            raise AllocationError(
                f"{self.name}: no memory for the intermediate buffer {expr} ({value} bytes, "
                f"{value / 2**30:.1f} GiB): this machine or this process's limit has not that "
                "much. Keep only a tile of it (compute_at into an outer loop, or "
                f"compute_inline), or use smaller shapes. {partial}"
            )
        if kind == "division":
            raise IntegerDivisionError(
                f"{self.name}: integer division {expr}{where} with divisor {value}: division "
                "by zero, or the smallest integer divided by -1, has no integer result. Guard "
                f"the divisor (te.if_then_else(b != 0, a // b, 0)) or use floats. {partial}"
            )
        raise IndexOutOfBoundsError(
            f"{self.name}: {expr}{where}: the index was {value}, outside the array. An index "
            f"read from data or over a symbolic size is checked when the function runs. "
            f"{partial}"
        )


def _packed_call(call: Callable[[], None]) -> None:
    """``call`` of a module that calls packed functions: an exception one of them raised
    is raised here, after the native call returned (see :mod:`mlc.runtime.registry`)."""
    run = registry.begin_run()
    try:
        call()
    finally:
        registry.end_run(run)
