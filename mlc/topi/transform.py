"""Injective operators: every output element reads one input element through an index map.

    reshape      B[i, j] = A[flat(i, j) // n, flat(i, j) % n]     (row-major order kept)
    transpose    B[i, j, k] = A[k, i, j]                          (axes=(2, 0, 1))
    pad          B[i] = A[i - before] if before <= i < before + n else pad_value
    concatenate  B[i] = A0[i] if i < n0 else A1[i - n0]
"""

from __future__ import annotations

from collections.abc import Sequence

from mlc import te
from mlc.errors import TEError
from mlc.tir.expr import PrimExpr
from mlc.topi.elemwise import const_shape


def reshape(x: te.Tensor, newshape: Sequence[int]) -> te.Tensor:
    """Same elements, new shape (one ``-1`` is inferred)."""
    shape = const_shape(x)
    size = 1
    for s in shape:
        size *= s
    new = list(newshape)
    if -1 in new:
        known = 1
        for s in new:
            if s != -1:
                known *= s
        new[new.index(-1)] = size // known
    total = 1
    for s in new:
        total *= s
    if total != size:
        raise TEError(f"cannot reshape {shape} to {tuple(newshape)}")

    def f(*i: PrimExpr) -> PrimExpr:
        flat: PrimExpr | int = 0
        for idx, s in zip(i, new):
            flat = flat * s + idx
        src = []
        for s in reversed(shape):
            src.append(flat % s if s != 1 else 0)
            flat = flat // s
        return x[tuple(reversed(src))]

    return te.compute(tuple(new), f, name="reshape", tag="injective")


def transpose(x: te.Tensor, axes: Sequence[int] | None = None) -> te.Tensor:
    """Permute axes (reverse them when ``axes`` is None), numpy's ``transpose``."""
    shape = const_shape(x)
    nd = len(shape)
    perm = tuple(reversed(range(nd))) if axes is None else tuple(a % nd for a in axes)

    def f(*i: PrimExpr) -> PrimExpr:
        src: list[PrimExpr] = [0] * nd  # type: ignore[list-item]
        for out_axis, in_axis in enumerate(perm):
            src[in_axis] = i[out_axis]
        return x[tuple(src)]

    return te.compute(tuple(shape[a] for a in perm), f, name="transpose", tag="injective")


def flatten(x: te.Tensor) -> te.Tensor:
    """(N, ...) -> (N, prod(...))."""
    shape = const_shape(x)
    rest = 1
    for s in shape[1:]:
        rest *= s
    return reshape(x, (shape[0], rest))


def pad(x: te.Tensor, pad_width: Sequence[Sequence[int]], pad_value: float = 0.0,
        name: str = "pad") -> te.Tensor:
    """Constant padding, one ``(before, after)`` pair per axis."""
    shape = const_shape(x)
    out = tuple(s + b + a for s, (b, a) in zip(shape, pad_width))

    def f(*i: PrimExpr) -> PrimExpr:
        conds = []
        src: list[PrimExpr] = []
        for idx, s, (b, _) in zip(i, shape, pad_width):
            if b:
                conds.append(idx >= b)
            if out[len(src)] > s + b:
                conds.append(idx < s + b)
            src.append(idx - b if b else idx)
        if not conds:
            return x[tuple(src)]
        return te.if_then_else(te.all(*conds), x[tuple(src)], te.const(pad_value, x.dtype))

    return te.compute(out, f, name=name, tag="injective")


def concatenate(*xs: te.Tensor, axis: int = 0) -> te.Tensor:
    """Join tensors along ``axis``."""
    if len(xs) == 1 and isinstance(xs[0], (list, tuple)):
        xs = tuple(xs[0])
    shapes = [const_shape(t) for t in xs]
    nd = len(shapes[0])
    axis %= nd
    offsets = [0]
    for s in shapes:
        offsets.append(offsets[-1] + s[axis])
    out = list(shapes[0])
    out[axis] = offsets[-1]

    def f(*i: PrimExpr) -> PrimExpr:
        def read(t: int) -> PrimExpr:
            idx = list(i)
            idx[axis] = i[axis] - offsets[t]
            return xs[t][tuple(idx)]

        expr = read(len(xs) - 1)
        for t in range(len(xs) - 2, -1, -1):
            expr = te.if_then_else(i[axis] < offsets[t + 1], read(t), expr)
        return expr

    return te.compute(tuple(out), f, name="concatenate", tag="injective")

