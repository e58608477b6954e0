"""Reducers: ``te.sum``, ``te.max``, ``te.min`` and your own with ``te.comm_reducer``.

A reducer called with an axis builds a ``Reduce`` node, which must be the whole body of a
``te.compute``::

    k = te.reduce_axis((0, n), name="k")
    C = te.compute((m,), lambda i: te.sum(A[i, k], axis=k))         # row sums
    D = te.compute((m,), lambda i: te.max(A[i, k], axis=k, where=A[i, k] > 0))

Called with two values instead of an axis, a reducer just combines them:
``te.max(x, 0.0)`` is ``max(x, 0.0)`` (this is how the seeds write ReLU).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mlc.errors import TEError
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    CommReducer,
    IterKind,
    IterVar,
    PrimExpr,
    Reduce,
    Var,
    _coerce,
    const,
    convert,
)

Reducer = Callable[..., PrimExpr]


def _axes(axis: Any, name: str) -> tuple[IterVar, ...]:
    items = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not items:
        raise TEError(f"te.{name}: give at least one reduce axis")
    for a in items:
        if not isinstance(a, IterVar) or a.kind is not IterKind.REDUCE:
            raise TEError(
                f"te.{name}: axis must be made by te.reduce_axis((lo, hi)), got {a!r}"
            )
    return tuple(items)


def comm_reducer(
    fcombine: Callable[[PrimExpr, PrimExpr], Any],
    fidentity: Callable[[str], Any],
    name: str = "reduce",
) -> Reducer:
    """Make a reducer from a commutative, associative combine function and its identity::

        product = te.comm_reducer(lambda x, y: x * y, lambda dtype: te.const(1, dtype),
                                  name="product")
        P = te.compute((m,), lambda i: product(A[i, k], axis=k))

    The result is called like ``te.sum``: ``reducer(expr, axis, where=None)``; with two
    values instead of an axis, ``reducer(a, b)`` combines them directly."""

    def make(dtype: str) -> CommReducer:
        lhs, rhs = Var("x", dtype), Var("y", dtype)
        result = convert(fcombine(lhs, rhs), dtype)
        identity = convert(fidentity(dtype), dtype)
        if identity.dtype != dtype:
            identity = identity.astype(dtype)
        if result.dtype != dtype:
            raise TEError(
                f"reducer {name!r}: combining two {dtype} values gives {result.dtype}; "
                "the combine function must keep the dtype"
            )
        return CommReducer(lhs, rhs, result, identity, name)

    def reducer(expr: Any, axis: Any = None, where: Any = None, init: Any = None) -> PrimExpr:
        if axis is None:
            raise TEError(f"te.{name}(expr, axis=k): the reduce axis is missing")
        is_axis = isinstance(axis, IterVar) or (
            isinstance(axis, (list, tuple)) and all(isinstance(a, IterVar) for a in axis)
        )
        if not is_axis:
            # Two values: combine them directly, e.g. te.max(x, 0).
            if where is not None:
                raise TEError(f"te.{name}(a, b) combines two values and takes no where=")
            a, b = _coerce(expr, axis)
            c = make(a.dtype)
            from mlc.tir.functor import substitute

            return substitute(c.result, {c.lhs: a, c.rhs: b})  # type: ignore[no-any-return]
        if init is not None:
            raise TEError(f"te.{name}: init= is not supported; start from the identity")
        src = convert(expr)
        axes = _axes(axis, name)
        cond = const(True) if where is None else convert(where)
        if not dt.is_bool(cond.dtype):
            raise TEError(f"te.{name}: where= must be a condition (bool), got `{cond}`")
        return Reduce(make(src.dtype), src, axes, cond)

    reducer.__name__ = name
    reducer.__doc__ = f"The {name!r} reducer: {name}(expr, axis, where=None)."
    return reducer


def _identity_min(dtype: str) -> PrimExpr:
    from mlc.te.intrin import min_value

    return min_value(dtype)


def _identity_max(dtype: str) -> PrimExpr:
    from mlc.te.intrin import max_value

    return max_value(dtype)


def _max2(x: PrimExpr, y: PrimExpr) -> PrimExpr:
    from mlc.tir.expr import Max

    return Max(x, y)


def _min2(x: PrimExpr, y: PrimExpr) -> PrimExpr:
    from mlc.tir.expr import Min

    return Min(x, y)


sum = comm_reducer(lambda x, y: x + y, lambda dtype: const(0, dtype), name="sum")  # noqa: A001
max = comm_reducer(_max2, _identity_min, name="max")  # noqa: A001
min = comm_reducer(_min2, _identity_max, name="min")  # noqa: A001

__all__: Sequence[str] = ["comm_reducer", "sum", "max", "min", "Reducer"]
