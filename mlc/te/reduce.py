"""Reducers: ``te.sum``, ``te.max``, ``te.min`` and your own with ``te.comm_reducer``.

A reducer called with an axis builds a ``Reduce`` node, which must be the whole body of a
``te.compute``::

    k = te.reduce_axis((0, n), name="k")
    C = te.compute((m,), lambda i: te.sum(A[i, k], axis=k))         # row sums
    D = te.compute((m,), lambda i: te.max(A[i, k], axis=k, where=A[i, k] > 0))

Called with two values instead of an axis, a reducer just combines them:
``te.max(x, 0.0)`` is ``max(x, 0.0)`` (this is how the seeds write ReLU).

**Start values.** ``te.sum`` starts from 0, ``te.max`` from ``-inf`` and ``te.min`` from
``+inf`` for floats (so the max of an all ``-inf`` row is ``-inf``, as in numpy), and from
the dtype's smallest/largest value for integers (``-2**31`` / ``2**31 - 1`` for int32). A
reduction over an empty range gives the start value; numpy's ``np.max`` raises there instead.

**NaN.** ``te.max``/``te.min`` are meant to propagate NaN like ``np.max``/``np.maximum``: one
NaN among the reduced values makes the result NaN (``np.fmax``, which skips NaN, is *not*
what they do). ``te.sum`` propagates NaN as any float addition does. The reference evaluator
(``mlc.testing.evaluate``) and the interpreter (``mlc.testing.eval_prim_func``) compute
exactly this; see ``tests/te/test_reduce.py`` for what compiled code does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mlc.errors import TEError
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    Add,
    BinaryOp,
    CommReducer,
    IterKind,
    IterVar,
    Max,
    Min,
    PrimExpr,
    Reduce,
    SizeVar,
    Var,
    _coerce,
    chain,
    const,
    convert,
)
from mlc.tir.reduce_identity import highest, lowest, reduction_identity  # noqa: F401

Reducer = Callable[..., PrimExpr]


def _not_a_reduce_axis(a: Any, name: str) -> TEError:
    """The error for a reducer given an axis that te.reduce_axis did not make."""
    if isinstance(a, IterVar):
        a = a.var
    label = f"'{a.name}'" if isinstance(a, Var) else f"`{a!r}`"
    what = (
        "a spatial axis (a loop variable of te.compute, one output index)"
        if isinstance(a, Var) and not isinstance(a, SizeVar)
        else "not a reduce axis"
    )
    return TEError(
        f"te.{name}: the axis {label} is {what}; a reducer runs over a reduce axis. Make one "
        f"with k = te.reduce_axis((0, extent), name=\"k\") and write te.{name}(expr, axis=k). "
        "(To combine two values, one of them a loop variable, write tir.Max(a, b) / tir.Min.)"
    )


def _is_spatial_axis(a: Any) -> bool:
    """A loop variable of a te.compute or a non-reduce IterVar (not a size like te.var)."""
    if isinstance(a, IterVar):
        return a.kind is not IterKind.REDUCE
    return isinstance(a, Var) and not isinstance(a, SizeVar)


def _axes(axis: Any, name: str) -> tuple[IterVar, ...]:
    items = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not items:
        raise TEError(f"te.{name}: give at least one reduce axis")
    for n, a in enumerate(items):
        if not isinstance(a, IterVar) or a.kind is not IterKind.REDUCE:
            raise _not_a_reduce_axis(a, name)
        if any(b is a for b in items[:n]):
            raise TEError(f"te.{name}: the reduce axis {a.var.name!r} is given twice in "
                          "axis=[...]; list each axis once")
    return tuple(items)


def comm_reducer(
    fcombine: Callable[[PrimExpr, PrimExpr], Any],
    fidentity: Callable[[str], Any],
    name: str = "reduce",
    direct: type[BinaryOp] | None = None,
) -> Reducer:
    """Make a reducer from a commutative, associative combine function and its identity::

        product = te.comm_reducer(lambda x, y: x * y, lambda dtype: te.const(1, dtype),
                                  name="product")
        P = te.compute((m,), lambda i: product(A[i, k], axis=k))

    The result is called like ``te.sum``: ``reducer(expr, axis, where=None)``; with two
    values instead of an axis, ``reducer(a, b)`` combines them directly (``direct`` is the
    operator node that does so, for the built-in reducers)."""

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
        if isinstance(axis, (list, tuple)):
            for a in axis:
                if _is_spatial_axis(a) or isinstance(a, IterVar):
                    _axes([a], name)
        elif _is_spatial_axis(axis):
            # te.sum(A[i], axis=i) would otherwise combine A[i] with the index i.
            raise _not_a_reduce_axis(axis, name)
        if not is_axis:
            # Two values: combine them directly, e.g. te.max(x, 0).
            if where is not None:
                raise TEError(f"te.{name}(a, b) combines two values and takes no where=")
            a, b = _coerce(expr, axis)
            if direct is not None:
                return chain(direct, a, b)  # long te.max(te.max(...), x) chains stay shallow
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
    """Where te.max starts: -inf for floats, the dtype's minimum for integers."""
    return lowest(dt.check(dtype))


def _identity_max(dtype: str) -> PrimExpr:
    """Where te.min starts: +inf for floats, the dtype's maximum for integers."""
    return highest(dt.check(dtype))


def _max2(x: PrimExpr, y: PrimExpr) -> PrimExpr:
    return Max(x, y)


def _min2(x: PrimExpr, y: PrimExpr) -> PrimExpr:
    return Min(x, y)


sum = comm_reducer(lambda x, y: x + y, lambda dtype: const(0, dtype), name="sum", direct=Add)  # noqa: A001
max = comm_reducer(_max2, _identity_min, name="max", direct=Max)  # noqa: A001
min = comm_reducer(_min2, _identity_max, name="min", direct=Min)  # noqa: A001

__all__: Sequence[str] = ["comm_reducer", "sum", "max", "min", "Reducer"]
