"""The simplifier's rewrite rules, applied bottom-up (children first).

Integers: sums and products by constants are read as linear forms (like terms collected,
constants folded); floordiv/floormod by a positive constant use the rules that split and fuse
introduce, proved with interval bounds:

    (a * c + b) // c  ->  a        when 0 <= b < c
    (a * c + b) %  c  ->  b        when 0 <= b < c
    (x // c) * c + x % c  ->  x
    (x // a) // b  ->  x // (a * b)          x % (a * b) % a  ->  x % a
    x // c -> 0,  x % c -> x                 when 0 <= x < c
    i * 32 + j < 1024  ->  True              when i < 32 and j < 32

Floats are only constant-folded: reassociating float sums would change results.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, cast

from mlc.tir import dtype as dt
from mlc.tir.arith.bound import is_finite, may_wrap
from mlc.tir.arith.linear import (
    Linear,
    expr_key,
    from_linear,
    fuse_div_mod,
    is_scalar_int,
    to_linear,
)
from mlc.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    Div,
    FloatImm,
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
    Ramp,
    Reduce,
    Select,
    Sub,
    Var,
)
from mlc.tir.float_int import float_to_int
from mlc.tir.functor import substitute

if TYPE_CHECKING:
    from mlc.tir.arith.analyzer import Analyzer


def _bool(v: bool) -> IntImm:
    return IntImm(int(v), "bool")


def _is_const(e: PrimExpr) -> bool:
    return isinstance(e, (IntImm, FloatImm))


def _round_float(v: float, dtype: str) -> float:
    """``v`` rounded to ``dtype``'s precision (float32 constants fold like float32 math)."""
    try:
        import numpy as np

        with np.errstate(all="ignore"):
            return float(np.dtype(dt.element(dtype)).type(v))
    except (ImportError, OverflowError):  # pragma: no cover
        return v


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


_CMP = {
    LT: lambda x, y: x < y,
    LE: lambda x, y: x <= y,
    GT: lambda x, y: x > y,
    GE: lambda x, y: x >= y,
    EQ: lambda x, y: x == y,
    NE: lambda x, y: x != y,
}
_NEGATE = {LT: GE, LE: GT, GT: LE, GE: LT, EQ: NE, NE: EQ}


class Rewriter:
    """Simplifies one expression with the variable bounds an :class:`Analyzer` knows."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer

    def bound(self, e: PrimExpr) -> tuple[float, float]:
        return self.analyzer.const_int_bound(e)

    # -- dispatch -------------------------------------------------------------------------
    def __call__(self, e: PrimExpr) -> PrimExpr:
        method = getattr(self, "visit_" + type(e).__name__, None)
        if method is None:
            return self.generic(e)
        out: PrimExpr = method(e)
        return out

    def generic(self, e: Any) -> Any:
        """Simplify the expression fields of a node this rewriter has no rule for."""
        if not dataclasses.is_dataclass(e):
            return e
        changes: dict[str, Any] = {}
        for f in dataclasses.fields(e):
            v = getattr(e, f.name)
            if isinstance(v, PrimExpr) and not isinstance(v, Var):
                new = self(v)
                if new is not v:
                    changes[f.name] = new
            elif isinstance(v, tuple) and v and all(isinstance(x, PrimExpr) for x in v):
                new_t = tuple(self(x) for x in v)
                if any(a is not b for a, b in zip(new_t, v)):
                    changes[f.name] = new_t
        return dataclasses.replace(cast(Any, e), **changes) if changes else e

    def visit_Var(self, e: Var) -> PrimExpr:
        value = self.analyzer.bound_value(e)
        return value if value is not None else e

    def visit_IntImm(self, e: IntImm) -> PrimExpr:
        return e

    def visit_FloatImm(self, e: FloatImm) -> PrimExpr:
        return e

    # -- integer linear arithmetic ----------------------------------------------------------
    def _linear_result(self, lin: Linear) -> PrimExpr:
        return from_linear(fuse_div_mod(lin))

    def visit_Add(self, e: Add) -> PrimExpr:
        return self._arith(e)

    def visit_Sub(self, e: Sub) -> PrimExpr:
        return self._arith(e)

    def visit_Mul(self, e: Mul) -> PrimExpr:
        return self._arith(e)

    def _arith(self, e: BinaryOp) -> PrimExpr:
        a, b = self(e.a), self(e.b)
        if is_scalar_int(e):
            la, lb = to_linear(a), to_linear(b)
            if isinstance(e, Add):
                la.add(lb)
            elif isinstance(e, Sub):
                la.add(lb, -1)
            elif lb.is_const():
                la = la.scaled(lb.const)
            elif la.is_const():
                la = lb.scaled(la.const)
            else:
                la = Linear(e.dtype)
                la.add_term(Mul(a, b), 1)
            return self._linear_result(la)
        folded = self._fold(type(e), a, b, e.dtype)
        if folded is not None:
            return folded
        return self._rebuild(e, a, b)

    def _rebuild(self, e: BinaryOp, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        if a is e.a and b is e.b:
            return e
        return type(e)(a, b, e.dtype)

    def _fold(self, cls: type[BinaryOp], a: PrimExpr, b: PrimExpr, dtype: str) -> PrimExpr | None:
        """Constant folding for scalars, and the Broadcast/Ramp rules for vectors."""
        if isinstance(a, IntImm) and isinstance(b, IntImm) and not dt.is_bool(dtype):
            x, y = a.value, b.value
            if cls in (FloorDiv, FloorMod, Div, Mod) and y == 0:
                return None
            r = {
                Add: lambda: x + y,
                Sub: lambda: x - y,
                Mul: lambda: x * y,
                FloorDiv: lambda: x // y,
                FloorMod: lambda: x % y,
                Div: lambda: _trunc_div(x, y),
                Mod: lambda: x - _trunc_div(x, y) * y,
                Min: lambda: min(x, y),
                Max: lambda: max(x, y),
            }.get(cls)
            return IntImm(r(), dtype) if r is not None else None
        if isinstance(a, FloatImm) and isinstance(b, FloatImm):
            x2, y2 = a.value, b.value
            fr = {
                Add: lambda: x2 + y2,
                Sub: lambda: x2 - y2,
                Mul: lambda: x2 * y2,
                Div: lambda: x2 / y2 if y2 != 0 else None,
                Min: lambda: min(x2, y2),
                Max: lambda: max(x2, y2),
            }.get(cls)
            if fr is not None:
                v = fr()
                if v is not None:
                    return FloatImm(_round_float(v, dtype), dtype)
            return None
        if dt.lanes(dtype) > 1:
            return self._vector(cls, a, b, dtype)
        return None

    def _vector(self, cls: type, a: PrimExpr, b: PrimExpr, dtype: str) -> PrimExpr | None:
        if isinstance(a, Broadcast) and isinstance(b, Broadcast) and a.lanes == b.lanes:
            return Broadcast(self(cls(a.value, b.value)), a.lanes)
        if cls in (Add, Sub) and isinstance(a, Ramp) and isinstance(b, Broadcast):
            return Ramp(self(cls(a.base, b.value)), a.stride, a.lanes)
        if cls is Add and isinstance(a, Broadcast) and isinstance(b, Ramp):
            return Ramp(self(Add(a.value, b.base)), b.stride, b.lanes)
        if cls in (Add, Sub) and isinstance(a, Ramp) and isinstance(b, Ramp):
            return Ramp(self(cls(a.base, b.base)), self(cls(a.stride, b.stride)), a.lanes)
        if cls is Mul and isinstance(a, Ramp) and isinstance(b, Broadcast):
            return Ramp(self(Mul(a.base, b.value)), self(Mul(a.stride, b.value)), a.lanes)
        if cls is Mul and isinstance(a, Broadcast) and isinstance(b, Ramp):
            return Ramp(self(Mul(a.value, b.base)), self(Mul(a.value, b.stride)), b.lanes)
        if (
            cls in (FloorDiv, FloorMod)
            and isinstance(a, Ramp)
            and isinstance(b, Broadcast)
            and isinstance(b.value, IntImm)
            and isinstance(a.stride, IntImm)
            and b.value.value > 0
            and a.stride.value >= 0
        ):
            # ramp(x, s, n) // c is one value when x % c + s * (n - 1) < c
            c = b.value.value
            lo, hi = self.bound(self(FloorMod(a.base, b.value)))
            if hi + a.stride.value * (a.lanes - 1) < c:
                if cls is FloorDiv:
                    return Broadcast(self(FloorDiv(a.base, b.value)), a.lanes)
                return Ramp(self(FloorMod(a.base, b.value)), a.stride, a.lanes)
        return None

    # -- division ---------------------------------------------------------------------------
    def visit_FloorDiv(self, e: FloorDiv) -> PrimExpr:
        a, b = self(e.a), self(e.b)
        folded = self._fold(FloorDiv, a, b, e.dtype)
        if folded is not None:
            return folded
        if is_scalar_int(e) and isinstance(b, IntImm) and b.value > 0 and not may_wrap(a):
            return self._floordiv_const(a, b.value)  # (x * 4) // 8 -> x // 2: not if x * 4 wraps
        return self._rebuild(e, a, b)

    def visit_FloorMod(self, e: FloorMod) -> PrimExpr:
        a, b = self(e.a), self(e.b)
        folded = self._fold(FloorMod, a, b, e.dtype)
        if folded is not None:
            return folded
        if is_scalar_int(e) and isinstance(b, IntImm) and b.value > 0 and not may_wrap(a):
            return self._floormod_const(a, b.value)
        return self._rebuild(e, a, b)

    def _split(self, lin: Linear, c: int) -> tuple[Linear, Linear]:
        """``lin == c * quotient + rest``, where rest holds the terms c does not divide."""
        quo, rest = Linear(lin.dtype), Linear(lin.dtype)
        for k, (atom, coef) in lin.terms.items():
            if coef % c == 0:
                quo.add_term(atom, coef // c, k)
            else:
                rest.add_term(atom, coef, k)
        quo.const, rest.const = divmod(lin.const, c)
        return quo, rest

    def _one_period(self, rest: Linear, c: int) -> int | None:
        """k when ``k * c <= rest < (k + 1) * c`` is provable, else None."""
        lo, hi = self.bound(from_linear(rest))
        if is_finite((lo, hi)) and int(lo) // c == int(hi) // c:
            return int(lo) // c
        return None

    def _regroup(self, rest: Linear, c: int) -> tuple[Linear, int] | None:
        """Find ``g`` dividing ``c`` with ``rest == g * big + small`` and ``0 <= small < g``.
        Then ``rest // c == big // (c / g)`` and ``rest % c == g * (big % (c / g)) + small``."""
        candidates = {math.gcd(coef, c) for _, coef in rest.terms.values()}
        for g in sorted((g for g in candidates if 1 < g < c), reverse=True):
            big, small = Linear(rest.dtype), Linear(rest.dtype)
            for k, (atom, coef) in rest.terms.items():
                if coef % g == 0:
                    big.add_term(atom, coef // g, k)
                else:
                    small.add_term(atom, coef, k)
            small.const = rest.const
            if big.is_const() or small.is_const() and small.const == 0:
                continue
            lo, hi = self.bound(from_linear(small))
            if lo >= 0 and hi < g:
                return big, g
        return None

    def _floordiv_const(self, a: PrimExpr, c: int) -> PrimExpr:
        dtype = a.dtype
        if c == 1:
            return a
        lin = to_linear(a)
        g = math.gcd(lin.gcd(), c)
        if g > 1:  # (x * 4) // 8 -> x // 2
            lin = Linear(dtype, {k: (t, v // g) for k, (t, v) in lin.terms.items()}, lin.const // g)
            c //= g
            if c == 1:
                return self._linear_result(lin)
        quo, rest = self._split(lin, c)
        k = self._one_period(rest, c)
        if k is not None:
            quo.const += k
            return self._linear_result(quo)
        regrouped = self._regroup(rest, c)
        if regrouped is not None:  # (x * 4 + y) // 8 -> x // 2 when 0 <= y < 4
            big, g = regrouped
            quo.add_term(self._floordiv_const(from_linear(big), c // g), 1)
            return self._linear_result(quo)
        inner = from_linear(rest)
        if isinstance(inner, FloorDiv) and isinstance(inner.b, IntImm) and inner.b.value > 0:
            inner = FloorDiv(inner.a, IntImm(inner.b.value * c, dtype))  # (x // a) // b
        else:
            inner = FloorDiv(inner, IntImm(c, dtype))
        quo.add_term(inner, 1)
        return self._linear_result(quo)

    def _floormod_const(self, a: PrimExpr, c: int) -> PrimExpr:
        dtype = a.dtype
        if c == 1:
            return IntImm(0, dtype)
        lin = to_linear(a)
        g = math.gcd(lin.gcd(), c)
        if g > 1:  # (x * 4) % 8 -> (x % 2) * 4
            reduced = Linear(
                dtype, {k: (t, v // g) for k, (t, v) in lin.terms.items()}, lin.const // g
            )
            inner = self._floormod_const(from_linear(reduced), c // g)
            return self._linear_result(to_linear(inner).scaled(g))
        _, rest = self._split(lin, c)
        k = self._one_period(rest, c)
        if k is not None:
            rest.const -= k * c
            return self._linear_result(rest)
        regrouped = self._regroup(rest, c)
        if regrouped is not None:  # (x * 4 + y) % 8 -> (x % 2) * 4 + y when 0 <= y < 4
            big, g = regrouped
            small = rest.copy()
            small.add(big, -g)
            out = to_linear(self._floormod_const(from_linear(big), c // g)).scaled(g)
            out.add(small)
            return self._linear_result(out)
        inner = from_linear(rest)
        if (
            isinstance(inner, FloorMod)
            and isinstance(inner.b, IntImm)
            and inner.b.value % c == 0
        ):
            return self._floormod_const(inner.a, c)  # x % (a * c) % c -> x % c
        return FloorMod(inner, IntImm(c, dtype))

    def visit_Div(self, e: Div) -> PrimExpr:
        a, b = self(e.a), self(e.b)
        folded = self._fold(Div, a, b, e.dtype)
        if folded is not None:
            return folded
        if is_scalar_int(e) and isinstance(b, IntImm) and b.value > 0 and self.bound(a)[0] >= 0:
            return self._floordiv_const(a, b.value)  # same as floor division when a >= 0
        if isinstance(b, IntImm) and b.value == 1:
            return a
        return self._rebuild(e, a, b)

    def visit_Mod(self, e: Mod) -> PrimExpr:
        a, b = self(e.a), self(e.b)
        folded = self._fold(Mod, a, b, e.dtype)
        if folded is not None:
            return folded
        if is_scalar_int(e) and isinstance(b, IntImm) and b.value > 0 and self.bound(a)[0] >= 0:
            return self._floormod_const(a, b.value)
        return self._rebuild(e, a, b)

    # -- min / max ---------------------------------------------------------------------------
    def visit_Min(self, e: Min) -> PrimExpr:
        return self._minmax(e)

    def visit_Max(self, e: Max) -> PrimExpr:
        return self._minmax(e)

    def _minmax(self, e: Min | Max) -> PrimExpr:
        a, b = self(e.a), self(e.b)
        folded = self._fold(type(e), a, b, e.dtype)
        if folded is not None:
            return folded
        if expr_key(a) == expr_key(b):
            return a
        if is_scalar_int(e):
            lo, hi = self._diff_bound(a, b)
            is_min = isinstance(e, Min)
            if hi <= 0:
                return a if is_min else b
            if lo >= 0:
                return b if is_min else a
        return self._rebuild(e, a, b)

    def _diff_bound(self, a: PrimExpr, b: PrimExpr) -> tuple[float, float]:
        """Bounds of the mathematical difference ``a - b``. Where the type wraps (uint8,
        int8, any unsigned) the difference computed in the type is not that difference,
        and ``x + 1 - x`` cancelling to 1 is wrong at x = 255: each side is bounded alone."""
        if may_wrap(a) or may_wrap(b):
            (alo, ahi), (blo, bhi) = self.bound(a), self.bound(b)
            return (alo - bhi, ahi - blo)
        diff = to_linear(a)
        diff.add(to_linear(b), -1)
        return self.bound(from_linear(diff))

    # -- comparisons and logic ----------------------------------------------------------------
    def visit_LT(self, e: LT) -> PrimExpr:
        return self._cmp(e)

    visit_LE = visit_GT = visit_GE = visit_EQ = visit_NE = visit_LT

    def _cmp(self, e: CmpOp) -> PrimExpr:
        a, b = self(e.a), self(e.b)
        cls = type(e)
        if _is_const(a) and _is_const(b):
            return _bool(_CMP[cls](a.value, b.value))  # type: ignore[attr-defined]
        if is_scalar_int(a) and is_scalar_int(b) and (may_wrap(a) or may_wrap(b)):
            if expr_key(a) == expr_key(b):
                return _bool(cls in (LE, GE, EQ))
            decided = self.bound(cls(a, b))  # each side bounded alone (see _diff_bound)
            if decided[0] == decided[1]:
                return _bool(bool(decided[0]))
        elif is_scalar_int(a) and is_scalar_int(b):
            la, lb = to_linear(a), to_linear(b)
            diff = la.copy()
            diff.add(lb, -1)
            decided = self.bound(cls(from_linear(diff), IntImm(0, a.dtype)))
            if decided[0] == decided[1]:
                return _bool(bool(decided[0]))
            if cls in (EQ, NE) and diff.terms:
                split = self._split_equality(diff, cls is EQ)
                if split is not None:
                    return split
            if set(la.terms) & set(lb.terms):  # cancel what both sides share
                left, right = Linear(a.dtype), Linear(a.dtype)
                for k, (atom, coef) in diff.terms.items():
                    (left if coef > 0 else right).add_term(atom, abs(coef), k)
                right.const = -diff.const
                return cls(self._linear_result(left), self._linear_result(right))
        elif expr_key(a) == expr_key(b) and not dt.is_float(a.dtype):
            return _bool(cls in (LE, GE, EQ))
        return self._rebuild(e, a, b)

    def _split_equality(self, diff: Linear, is_eq: bool) -> PrimExpr | None:
        """``sum(c_i * x_i) + d == 0`` where it can be said more simply: false when the gcd
        of the coefficients does not divide ``d``; and, when every term is non-negative and
        ``d == 0``, ``x_i == 0`` for every i (the init guard ``k_0 * 4 + k_1 == 0`` of a split
        reduction becomes ``k_0 == 0 and k_1 == 0``)."""
        coefs = [coef for _, coef in diff.terms.values()]
        g = 0
        for c in coefs:
            g = math.gcd(g, abs(c))
        if g and diff.const % g:
            return _bool(not is_eq)
        if diff.const != 0 or not (all(c > 0 for c in coefs) or all(c < 0 for c in coefs)):
            return None
        atoms = [atom for atom, _ in diff.terms.values()]
        if not all(self.bound(atom)[0] >= 0 for atom in atoms):
            return None
        parts = [
            (EQ if is_eq else NE)(atom, IntImm(0, atom.dtype)) for atom in atoms
        ]
        out: PrimExpr = parts[0]
        for p in parts[1:]:
            out = And(out, p) if is_eq else Or(out, p)
        return out

    def visit_And(self, e: And) -> PrimExpr:
        a, b = self(e.a), self(e.b)
        for x, y in ((a, b), (b, a)):
            if isinstance(x, IntImm) and dt.lanes(e.dtype) == 1:
                return y if x.value else _bool(False)
        if expr_key(a) == expr_key(b):
            return a
        return self._rebuild(e, a, b)

    def visit_Or(self, e: Or) -> PrimExpr:
        a, b = self(e.a), self(e.b)
        for x, y in ((a, b), (b, a)):
            if isinstance(x, IntImm) and dt.lanes(e.dtype) == 1:
                return _bool(True) if x.value else y
        if expr_key(a) == expr_key(b):
            return a
        return self._rebuild(e, a, b)

    def visit_Not(self, e: Not) -> PrimExpr:
        a = self(e.a)
        if isinstance(a, IntImm):
            return _bool(not a.value)
        if isinstance(a, Not):
            return a.a
        if isinstance(a, CmpOp) and not dt.is_float(a.a.dtype):
            return _NEGATE[type(a)](a.a, a.b)  # not (x < y) -> x >= y
        return e if a is e.a else Not(a, e.dtype)

    def visit_Select(self, e: Select) -> PrimExpr:
        c = self(e.condition)
        if isinstance(c, IntImm):
            return self(e.true_value) if c.value else self(e.false_value)
        t, f = self(e.true_value), self(e.false_value)
        if expr_key(t) == expr_key(f):
            return t
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        return Select(c, t, f, e.dtype)

    # -- casts, lets, calls, memory -------------------------------------------------------------
    def visit_Cast(self, e: Cast) -> PrimExpr:
        v = self(e.value)
        if v.dtype == e.dtype:
            return v
        if dt.lanes(e.dtype) == 1 and isinstance(v, (IntImm, FloatImm)):
            if dt.is_bool(e.dtype):
                return _bool(bool(v.value))
            if dt.is_float(e.dtype):
                return FloatImm(_round_float(float(v.value), e.dtype), e.dtype)
            if isinstance(v, FloatImm):  # toward zero, saturating, NaN 0 (mlc.tir.float_int)
                return IntImm(float_to_int(v.value, e.dtype), e.dtype)
            bits = dt.bits(e.dtype)  # integer -> narrower integer wraps, like numpy
            if dt.is_uint(e.dtype):
                return IntImm(v.value % (2**bits), e.dtype)
            wrapped = (v.value + 2 ** (bits - 1)) % (2**bits) - 2 ** (bits - 1)
            return IntImm(wrapped, e.dtype)
        if isinstance(v, Broadcast):
            return Broadcast(self(Cast(dt.element(e.dtype), v.value)), v.lanes)
        return e if v is e.value else Cast(e.dtype, v)

    def visit_Let(self, e: Let) -> PrimExpr:
        value = self(e.value)
        if isinstance(value, (IntImm, FloatImm, Var)):
            return self(substitute(e.body, {e.var: value}))
        with self.analyzer.let_scope(e.var, value):
            body = self(e.body)
        if value is e.value and body is e.body:
            return e
        return Let(e.var, value, body, e.dtype)

    def visit_Call(self, e: Call) -> PrimExpr:
        return self.generic(e)

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        idx = tuple(self(i) for i in e.indices)
        if all(a is b for a, b in zip(idx, e.indices)):
            return e
        return BufferLoad(e.buffer, idx, e.dtype)

    def visit_Ramp(self, e: Ramp) -> PrimExpr:
        base, stride = self(e.base), self(e.stride)
        if base is e.base and stride is e.stride:
            return e
        return Ramp(base, stride, e.lanes, e.dtype)

    def visit_Broadcast(self, e: Broadcast) -> PrimExpr:
        v = self(e.value)
        return e if v is e.value else Broadcast(v, e.lanes, e.dtype)

    def visit_Reduce(self, e: Reduce) -> PrimExpr:
        src, cond = self(e.source), self(e.condition)
        if src is e.source and cond is e.condition:
            return e
        return Reduce(e.combiner, src, e.axis, cond, e.dtype)
