"""Where a reduction starts: the identity of its combiner, shared by te's reducers and the
lowering passes that split a reduction (a thread with no part, an inactive lane)."""

from __future__ import annotations

import numpy as np

from mlc.tir import dtype as dt
from mlc.tir.expr import Max, Min, Mul, PrimExpr, const


def lowest(dtype: str) -> PrimExpr:
    """Where ``max`` starts: -inf for floats, False for bool, the minimum for integers."""
    if dt.is_float(dtype):
        return const(float("-inf"), dtype)
    if dt.is_bool(dtype):
        return const(False, dtype)
    return const(int(np.iinfo(dtype).min), dtype)


def highest(dtype: str) -> PrimExpr:
    """Where ``min`` starts: +inf for floats, True for bool, the maximum for integers."""
    if dt.is_float(dtype):
        return const(float("inf"), dtype)
    if dt.is_bool(dtype):
        return const(True, dtype)
    return const(int(np.iinfo(dtype).max), dtype)


def reduction_identity(op: type, dtype: str) -> PrimExpr:
    """The value a reduction with combiner ``op`` (Add, Mul, Max or Min) starts from: 0, 1,
    and for max/min the identities of ``te.max``/``te.min`` (-inf/+inf for floats, so a row
    of -inf has the maximum -inf as in numpy)."""
    if op is Max:
        return lowest(dtype)
    if op is Min:
        return highest(dtype)
    return const(1 if op is Mul else 0, dtype)
