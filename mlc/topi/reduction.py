"""Reductions over axes: ``sum``, ``mean``, ``max``, ``min`` (numpy's ``axis``/``keepdims``).

    B = topi.sum(A, axis=1)        # B[i] = sum over k of A[i, k]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlc import te
from mlc.errors import TEError
from mlc.tir.expr import PrimExpr
from mlc.topi.elemwise import const_shape


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for a in axes:
        if not isinstance(a, int):
            raise TEError(f"axis must be an int or a tuple of ints, got {axis!r}")
        if not -ndim <= a < ndim:
            raise TEError(f"axis {a} is out of range for a tensor of rank {ndim}")
    return tuple(sorted({a % ndim for a in axes}))


def _reduce(name: str, reducer: Callable[..., PrimExpr], mean: bool = False) -> Callable[..., Any]:
    def op(x: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
        shape = const_shape(x)
        axes = normalize_axes(axis, len(shape))
        if not axes:  # numpy: a reduction over no axis (axis=()) is the tensor itself
            return te.compute(shape, lambda *i: x[i], name=name, tag="elemwise")
        rvs = {a: te.reduce_axis((0, shape[a]), name=f"k{a}") for a in axes}
        out_shape = tuple(1 if a in axes else s for a, s in enumerate(shape)
                          if keepdims or a not in axes)
        count = 1
        for a in axes:
            count *= shape[a]

        def f(*i: PrimExpr) -> PrimExpr:
            it = iter(i)
            idx: list[PrimExpr] = []
            for a in range(len(shape)):
                if a in axes:
                    if keepdims:
                        next(it)
                    idx.append(rvs[a].var)
                else:
                    idx.append(next(it))
            return reducer(x[tuple(idx)], axis=[rvs[a] for a in axes])

        red = te.compute(out_shape, f, name=name if not mean else name + "_sum",
                         tag="comm_reduce")
        if not mean:
            return red
        return te.compute(out_shape, lambda *i: red[i] / float(count), name=name,
                          tag="elemwise")

    op.__name__ = name
    op.__doc__ = f"``{name}`` over ``axis`` (None: all axes), like numpy's."
    return op


sum = _reduce("sum", te.sum)  # noqa: A001
max = _reduce("max", te.max)  # noqa: A001
min = _reduce("min", te.min)  # noqa: A001
mean = _reduce("mean", te.sum, mean=True)
