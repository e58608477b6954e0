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
from collections.abc import Callable
from typing import Any

from mlc.errors import IndexOutOfBoundsError, IntegerDivisionError, RuntimeCheckError
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
        if sites:
            address = engine.get_global_value_address(ERROR_RECORD)
            if address:
                self.slots = (ctypes.c_int64 * 2).from_address(address)

    def run(self, fn: Callable[..., None], native: Any) -> None:
        if self.packed:
            self.wrap(lambda: fn(*native))()
            return
        slots = self.slots
        if slots is None:
            fn(*native)
            return
        slots[0] = 0
        fn(*native)
        if slots[0]:
            self.raise_error()

    def wrap(self, call: Callable[[], None]) -> Callable[[], None]:
        """``call`` followed by the check of the record (the call itself if no checks)."""
        slots = self.slots
        if self.packed:
            return _packed_checked(call, self)
        if slots is None:
            return call

        def checked() -> None:
            slots[0] = 0
            call()
            if slots[0]:
                self.raise_error()

        return checked

    def raise_error(self) -> None:
        site, value = int(self.slots[0]), int(self.slots[1])
        self.slots[0] = 0
        if not 1 <= site <= len(self.sites):
            raise RuntimeCheckError(f"{self.name}: a run-time check failed (site {site})")
        kind, expr, store = self.sites[site - 1]
        where = f" (in the store to {store})" if store else ""
        partial = "The outputs of this call are partial."
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


def _packed_checked(call: Callable[[], None], record: ErrorRecord) -> Callable[[], None]:
    """``call`` for a module that calls packed functions: an exception one of them raised
    is raised here, after the native call returned (see :mod:`mlc.runtime.registry`)."""
    slots = record.slots

    def checked() -> None:
        run = registry.begin_run()
        if slots is not None:
            slots[0] = 0
        try:
            call()
        finally:
            registry.end_run(run)
        if slots is not None and slots[0]:
            record.raise_error()

    return checked
