"""mlc: a small machine-learning compiler for teaching.

    import mlc
    from mlc import te, tir
    f = mlc.build(te.create_schedule(C.op), [A, B, C])   # or mlc.build(sch.mod)
    print(mlc.lower(sch.mod))                             # the loop IR after lowering

The parts, in the order data flows through them: ``mlc.tir`` (the loop IR and schedules),
``mlc.te`` (tensor expressions), ``mlc.lower``, codegen and runtime (``mlc.build``), then
``mlc.topi`` and ``mlc.graph`` (operators and graphs), ``mlc.tune`` (automatic
optimization) and ``mlc.viz`` (pictures and widgets for notebooks).
"""

from __future__ import annotations

import importlib
import types
from typing import Any

from mlc import driver, te, tir, tune
from mlc import lower as lower  # the package of lowering passes, made callable below
from mlc.driver import build


class _CallableLower(types.ModuleType):
    """``mlc.lower`` is the package of lowering passes (``mlc.lower.pipeline``,
    ``mlc.lower.PASSES``) and, called, the driver's ``lower(obj, args)``: the lowered
    PrimFunc of a schedule, ready to print."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return driver.lower(*args, **kwargs)


lower.__class__ = _CallableLower

__all__ = ["build", "lower", "te", "tir", "tune", "graph", "topi", "testing", "viz"]

# Heavier parts load on first use: ``mlc.graph.var(...)`` works after ``import mlc``.
_LAZY = {"graph", "topi", "testing", "viz", "examples"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f"mlc.{name}")
    raise AttributeError(f"module 'mlc' has no attribute {name!r}")
