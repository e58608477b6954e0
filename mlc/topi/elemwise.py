"""Elementwise and broadcasting operators as te computations.

Binary ops follow numpy broadcasting: shapes align on the right and a size-1 axis (or a
missing one) is read at index 0::

    A: (4, 3)   B: (3,)   ->   C[i, j] = A[i, j] + B[j]
    A: (4, 1)   B: (1, 3) ->   C[i, j] = A[i, 0] + B[0, j]

Every computation carries a ``tag`` ("elemwise", "broadcast") that the default schedule reads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from mlc import te
from mlc.errors import TEError
from mlc.tir.expr import PrimExpr, as_int
from mlc.topi import fastmath

Operand = te.Tensor | float | int


def const_shape(t: te.Tensor) -> tuple[int, ...]:
    """The shape of ``t`` as ints (topi works on static shapes)."""
    out = []
    for s in t.shape:
        v = as_int(s)
        if v is None:
            raise TEError(f"topi needs static shapes; tensor {t.name!r} has a symbolic size {s}")
        out.append(v)
    return tuple(out)


def broadcast_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    out = []
    for i in range(max(len(a), len(b))):
        x = a[len(a) - 1 - i] if i < len(a) else 1
        y = b[len(b) - 1 - i] if i < len(b) else 1
        if x != y and 1 not in (x, y):
            raise TEError(f"shapes {tuple(a)} and {tuple(b)} do not broadcast")
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def broadcast_index(t: te.Tensor, idx: Sequence[PrimExpr]) -> PrimExpr:
    """Read ``t`` at the output index ``idx`` under numpy broadcasting."""
    shape = const_shape(t)
    tail = idx[len(idx) - len(shape):] if shape else ()
    return t[tuple(0 if s == 1 else i for s, i in zip(shape, tail))]


def _binary(name: str, fn: Callable[[PrimExpr, PrimExpr], PrimExpr]) -> Callable[..., Any]:
    def op(a: Operand, b: Operand) -> te.Tensor:
        if not isinstance(a, te.Tensor) and not isinstance(b, te.Tensor):
            raise TEError(f"topi.{name} needs at least one tensor operand")
        sa = const_shape(a) if isinstance(a, te.Tensor) else ()
        sb = const_shape(b) if isinstance(b, te.Tensor) else ()
        shape = broadcast_shape(sa, sb)
        tag = "elemwise" if sa == sb or not sa or not sb else "broadcast"
        dtype = a.dtype if isinstance(a, te.Tensor) else b.dtype  # type: ignore[union-attr]

        def val(x: Operand, idx: Sequence[PrimExpr]) -> PrimExpr:
            if isinstance(x, te.Tensor):
                return broadcast_index(x, idx)
            return te.const(x, dtype)

        return te.compute(shape, lambda *i: fn(val(a, i), val(b, i)), name=name, tag=tag)

    op.__name__ = name
    op.__doc__ = f"``{name}(a, b)`` elementwise, with numpy broadcasting."
    return op


def _unary(name: str, fn: Callable[[PrimExpr], PrimExpr]) -> Callable[[te.Tensor], te.Tensor]:
    def op(x: te.Tensor) -> te.Tensor:
        return te.compute(x.shape, lambda *i: fn(x[i]), name=name, tag="elemwise")

    op.__name__ = name
    op.__doc__ = f"``{name}(x)`` elementwise."
    return op


add = _binary("add", lambda a, b: a + b)
subtract = _binary("subtract", lambda a, b: a - b)
multiply = _binary("multiply", lambda a, b: a * b)
divide = _binary("divide", lambda a, b: a / b)
maximum = _binary("maximum", lambda a, b: te.max(a, b))
minimum = _binary("minimum", lambda a, b: te.min(a, b))
power = _binary("power", lambda a, b: te.pow(a, b))

negative = _unary("negative", lambda x: -x)
exp = _unary("exp", te.exp)
log = _unary("log", te.log)
sqrt = _unary("sqrt", te.sqrt)
tanh = _unary("tanh", te.tanh)
erf = _unary("erf", fastmath.erf)  # float32: vector arithmetic (topi.fastmath)
sigmoid = _unary("sigmoid", te.sigmoid)
abs = _unary("abs", te.abs)  # noqa: A001
copy = _unary("copy", lambda x: x)


def relu(x: te.Tensor) -> te.Tensor:
    """``max(x, 0)``."""
    return te.compute(x.shape, lambda *i: te.max(x[i], te.const(0, x.dtype)), name="relu",
                      tag="elemwise")


def gelu(x: te.Tensor, approximate: str = "tanh") -> te.Tensor:
    """GELU. ``approximate="tanh"`` (the default): ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
    x^3)))``; ``"none"``: the exact ``0.5 x (1 + erf(x / sqrt(2)))`` (PyTorch's default)."""
    if approximate not in ("tanh", "none"):
        raise TEError(f"gelu: approximate must be 'tanh' or 'none', got {approximate!r}")
    c = math.sqrt(2.0 / math.pi)

    def f(*i: PrimExpr) -> PrimExpr:
        v = x[i]
        if approximate == "none":  # erf as vector arithmetic for float32 (topi.fastmath)
            return 0.5 * v * (1.0 + fastmath.erf(v * (1.0 / math.sqrt(2.0))))
        return 0.5 * v * (1.0 + te.tanh(c * (v + 0.044715 * v * v * v)))

    return te.compute(x.shape, f, name="gelu", tag="elemwise")
