"""mlc: a small machine-learning compiler for teaching.

    import mlc
    from mlc import te, tir
    f = mlc.build(te.create_schedule(C.op), [A, B, C])   # or mlc.build(sch.mod)
    print(mlc.lower(sch.mod))                             # the loop IR after lowering

The parts, in the order data flows through them: ``mlc.tir`` (the loop IR and schedules),
``mlc.te`` (tensor expressions), ``mlc.transform`` (the lowering passes), ``mlc.runtime``
(running compiled code), ``mlc.target`` (one back end per target: its passes, its codegen, its
Module; ``mlc.build`` picks one), then ``mlc.topi`` and ``mlc.graph`` (operators and graphs),
``mlc.tune`` (automatic optimization) and ``mlc.viz`` (pictures and widgets for notebooks).
"""

from __future__ import annotations

import importlib
from typing import Any

from mlc import driver, te, tir, transform
from mlc.driver import build, lower

__all__ = ["build", "lower", "te", "tir", "transform", "tune", "graph", "topi", "testing", "viz",
           "driver", "register_func", "get_global_func", "list_global_func_names"]

# Heavier parts load on first use: ``mlc.graph.var(...)`` and ``mlc.tune.tune_tir(...)`` work
# after ``import mlc``; ``import mlc`` itself loads no tuner, no graph and no back end.
_LAZY = {"graph", "topi", "testing", "viz", "examples", "target", "runtime", "script", "vdla",
         "tune", "rpc"}
# TVM's names for arrays and devices: mlc.nd.array(x, mlc.cpu(0)) (mlc.runtime.ndarray)
_ALIASES = {"nd": ("mlc.runtime.ndarray", None), "cpu": ("mlc.runtime.ndarray", "cpu"),
            "meta_schedule": ("mlc.tune.meta_schedule", None)}  # the course's ``ms``


# Packed functions (TVM's ``tvm.register_func``): the registry loads on first use too.
_REGISTRY_NAMES = {"register_func", "get_global_func", "list_global_func_names"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f"mlc.{name}")
    if name in _ALIASES:
        where, attr = _ALIASES[name]
        found = importlib.import_module(where)
        return found if attr is None else getattr(found, attr)
    if name in _REGISTRY_NAMES:
        return getattr(importlib.import_module("mlc.runtime.registry"), name)
    raise AttributeError(f"module 'mlc' has no attribute {name!r}")
