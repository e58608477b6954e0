"""Constant integer bounds by interval arithmetic.

``bound_of(e, var_bound)`` returns ``(lo, hi)``, inclusive, such that every value ``e`` can take
lies in ``[lo, hi]`` when each variable ``v`` lies in ``var_bound(v)``. Ends are Python ints, or
``-inf``/``+inf`` (floats) when nothing is known. Floats and loads of data are unknown.

    i in [0, 31], j in [0, 31]:   i * 32 + j      -> (0, 1023)
                                  (i * 32 + j) // 8 -> (0, 127)
                                  j % 8           -> (0, 7)
                                  0 - i           -> (-31, 0)
"""

from __future__ import annotations

import math
from collections.abc import Callable

from mlc.tir import dtype as dt
from mlc.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    Sub,
    Var,
)
from mlc.tir.functor import contains

INF = math.inf
Bound = tuple[float, float]  # ints, or +-inf
UNKNOWN: Bound = (-INF, INF)


def dtype_bound(dtype: str) -> Bound:
    """The values a scalar of ``dtype`` can hold (unknown for floats and wide ints)."""
    if dt.is_bool(dtype):
        return (0, 1)
    if dt.is_int(dtype):
        b = dt.bits(dtype)
        if b >= 32:  # index types: treated as unbounded (arithmetic is assumed not to wrap)
            return (0, INF) if dt.is_uint(dtype) else UNKNOWN
        if dt.is_uint(dtype):
            return (0, 2**b - 1)
        return (-(2 ** (b - 1)), 2 ** (b - 1) - 1)
    return UNKNOWN


def wraps(dtype: str) -> bool:
    """Does integer arithmetic in ``dtype`` wrap around in ways the bounds must respect? The
    narrow types (int8/16, uint8/16) do, and so does every unsigned type: ``a - b`` in uint8
    is never negative, so it says nothing about which of ``a`` and ``b`` is larger. Signed
    32/64-bit ints are index types, assumed not to overflow."""
    return dt.is_int(dtype) and (dt.is_uint(dtype) or dt.bits(dtype) < 32)


def reads_data(e: PrimExpr) -> bool:
    """Does ``e`` compute on data (a loaded value, a call's result) rather than on loop
    variables, sizes and constants only?"""
    return contains(e, lambda n: isinstance(n, (BufferLoad, Call)))


def may_wrap(e: PrimExpr) -> bool:
    """Must the simplifier treat ``e``'s integer arithmetic as wrapping around? Always in the
    types of :func:`wraps`, and in int32/int64 when ``e`` computes on data: numpy wraps
    there (``A[i] + 1 > A[i]`` is false at INT32_MAX, ``A[i] * 2 // 2`` is not ``A[i]``).
    Index arithmetic of loops, sizes and constants is assumed not to overflow, as in TVM."""
    return dt.is_int(e.dtype) and (wraps(e.dtype) or reads_data(e))


def _mul(x: float, y: float) -> float:
    if x == 0 or y == 0:
        return 0  # 0 * inf is 0 here: an end that is exactly 0 stays 0
    return x * y


def _div_end(x: float, y: float, trunc: bool) -> float:
    if math.isinf(y):
        return 0 if not math.isinf(x) else (x if y > 0 else -x)
    c = int(y)
    if math.isinf(x):
        return x if c > 0 else -x
    q = int(x) // c
    if trunc and q < 0 and q * c != x:
        q += 1  # round toward zero
    return q


def intersect(a: Bound, b: Bound) -> Bound:
    return (max(a[0], b[0]), min(a[1], b[1]))


def union(a: Bound, b: Bound) -> Bound:
    return (min(a[0], b[0]), max(a[1], b[1]))


def is_finite(b: Bound) -> bool:
    return not (math.isinf(b[0]) or math.isinf(b[1]))


class BoundEvaluator:
    """Interval arithmetic over an expression; ``var_bound`` gives each variable's bound."""

    def __init__(self, var_bound: Callable[[Var], Bound]) -> None:
        self.var_bound = var_bound
        self.let_bounds: dict[int, Bound] = {}

    def __call__(self, e: PrimExpr) -> Bound:
        b = self._eval(e)
        if not dt.is_float(e.dtype) and dt.lanes(e.dtype) == 1:
            full = dtype_bound(e.dtype)
            if not full[0] <= b[0] <= b[1] <= full[1] and may_wrap(e):
                return full  # e.g. uint8 x + 1 for x = 255 wraps to 0: any value of the type
            b = intersect(b, full)
        return b

    def _eval(self, e: PrimExpr) -> Bound:  # noqa: C901 - one case per node kind
        if isinstance(e, IntImm):
            return (e.value, e.value)
        if dt.is_float(e.dtype) or dt.lanes(e.dtype) != 1:
            return UNKNOWN
        if isinstance(e, Var):
            if id(e) in self.let_bounds:
                return self.let_bounds[id(e)]
            return intersect(self.var_bound(e), dtype_bound(e.dtype))
        if isinstance(e, Add):
            a, b = self(e.a), self(e.b)
            return (a[0] + b[0], a[1] + b[1])
        if isinstance(e, Sub):
            a, b = self(e.a), self(e.b)
            return (a[0] - b[1], a[1] - b[0])
        if isinstance(e, Mul):
            a, b = self(e.a), self(e.b)
            ends = [_mul(x, y) for x in a for y in b]
            return (min(ends), max(ends))
        if isinstance(e, (FloorDiv, Div)):
            return self._div(e)
        if isinstance(e, (FloorMod, Mod)):
            return self._mod(e)
        if isinstance(e, Min):
            a, b = self(e.a), self(e.b)
            return (min(a[0], b[0]), min(a[1], b[1]))
        if isinstance(e, Max):
            a, b = self(e.a), self(e.b)
            return (max(a[0], b[0]), max(a[1], b[1]))
        if isinstance(e, Select):
            return union(self(e.true_value), self(e.false_value))
        if isinstance(e, Cast):
            if dt.is_float(e.value.dtype):
                return dtype_bound(e.dtype)
            return intersect(self(e.value), dtype_bound(e.dtype))
        if isinstance(e, Let):
            self.let_bounds[id(e.var)] = self(e.value)
            try:
                return self(e.body)
            finally:
                del self.let_bounds[id(e.var)]
        if isinstance(e, CmpOp):
            return self._cmp(e)
        if isinstance(e, (And, Or, Not)):
            return (0, 1)
        if isinstance(e, BufferLoad):
            return dtype_bound(e.dtype)
        return dtype_bound(e.dtype)

    def _div(self, e: FloorDiv | Div) -> Bound:
        a, b = self(e.a), self(e.b)
        if not (b[0] > 0 or b[1] < 0):
            return UNKNOWN  # the divisor may be 0
        # Both floor and truncating division are monotone in each argument on one side of
        # zero, so the extremes are at the corners.
        trunc = isinstance(e, Div)
        ends = [_div_end(x, y, trunc) for x in a for y in b]
        return (min(ends), max(ends))

    def _mod(self, e: FloorMod | Mod) -> Bound:
        a, b = self(e.a), self(e.b)
        if b[0] > 0:
            top = b[1] - 1
            if a[0] >= 0:
                if is_finite(b) and b[0] == b[1] and is_finite(a):
                    c = int(b[0])
                    if a[0] // c == a[1] // c:  # one period: exact
                        return (a[0] % c, a[1] % c)
                return (0, min(a[1], top))
            if isinstance(e, FloorMod):
                return (0, top)
            return (-top, top if a[1] > 0 else 0)
        if isinstance(e, FloorMod) and b[1] < 0:
            return (b[0] + 1, 0)
        return UNKNOWN

    def _cmp(self, e: CmpOp) -> Bound:
        if dt.is_float(e.a.dtype):
            return (0, 1)
        a, b = self(e.a), self(e.b)
        lo, hi = a[0] - b[1], a[1] - b[0]  # bounds of a - b
        decided: bool | None = None
        if isinstance(e, LT):
            decided = True if hi < 0 else (False if lo >= 0 else None)
        elif isinstance(e, LE):
            decided = True if hi <= 0 else (False if lo > 0 else None)
        elif isinstance(e, GT):
            decided = True if lo > 0 else (False if hi <= 0 else None)
        elif isinstance(e, GE):
            decided = True if lo >= 0 else (False if hi < 0 else None)
        elif isinstance(e, EQ):
            decided = True if lo == hi == 0 else (False if lo > 0 or hi < 0 else None)
        elif isinstance(e, NE):
            decided = False if lo == hi == 0 else (True if lo > 0 or hi < 0 else None)
        if decided is None:
            return (0, 1)
        return (int(decided), int(decided))
