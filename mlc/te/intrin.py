"""Math and logic helpers for tensor expressions: ``te.exp``, ``te.if_then_else``, ``te.all``...

Each builds a loop-IR node: math functions are ``Call`` nodes by name (codegen maps the name
to an LLVM intrinsic or libm), ``if_then_else`` is a ``Select`` (only the chosen side is
evaluated, so it may guard an out-of-bounds load, as in padding)::

    Apad = te.compute((n + 2,), lambda i: te.if_then_else(
        te.all(i >= 1, i <= n), A[i - 1], 0.0), name="Apad")
    S = te.compute((n,), lambda i: te.sigmoid(A[i]))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlc.errors import TEError
from mlc.tir import dtype as dt
from mlc.tir import intrin
from mlc.tir.expr import (
    And,
    Call,
    FloorDiv,
    FloorMod,
    Mod,
    Or,
    PrimExpr,
    Select,
    _coerce,
    chain,
    check_divisor,
    check_int_fits,
    convert,
)
from mlc.tir.expr import Div as _Div
from mlc.tir.expr import const as _const


def const(value: int | float | bool, dtype: str | None = None) -> PrimExpr:
    """A constant of ``dtype`` (int32, float32 or bool from the Python value by default).
    An integer ``dtype`` must hold the value: ``te.const(1000, "int8")`` is refused (the
    compiled code would see -24), as numpy refuses ``np.int8(1000)``."""
    if isinstance(value, np.generic):  # np.int64(5), np.float32("nan"): numpy's dtype
        dtype = dtype or str(value.dtype)
        value = value.item()
    c = _const(value, dtype)
    check_int_fits(value, c.dtype, "te.const")
    return c


def _float_arg(x: Any, fname: str) -> PrimExpr:
    e = convert(x)
    if not dt.is_float(e.dtype):
        raise TEError(
            f"te.{fname} needs a float argument, got `{e}` of dtype {e.dtype}; convert it "
            f"first with .astype(\"float32\")"
        )
    return e


def _unary(op: str) -> Any:
    """``te.<op>``: a Call of the intrinsic table's function ``op`` (mlc/tir/intrin.py)."""
    row = intrin.INTRINSICS[op]

    def f(x: Any) -> PrimExpr:
        e = _float_arg(x, op) if row.float_only else convert(x)
        return Call(e.dtype, op, (e,))

    f.__name__ = op
    f.__doc__ = row.doc
    return f


exp = _unary("exp")
exp2 = _unary("exp2")
log = _unary("log")
log2 = _unary("log2")
log10 = _unary("log10")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")  # noqa: A001
erf = _unary("erf")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
atan = _unary("atan")
trunc = _unary("trunc")
nearbyint = _unary("nearbyint")
log1p = _unary("log1p")
expm1 = _unary("expm1")


def abs(x: Any) -> PrimExpr:  # noqa: A001
    """``|x|``: ``fabs`` for floats, a Select for integers."""
    e = convert(x)
    if dt.is_float(e.dtype):
        return Call(e.dtype, "fabs", (e,))
    if dt.is_uint(e.dtype) or dt.is_bool(e.dtype):
        return e
    return Select(e < 0, -e, e)


def pow(x: Any, y: Any) -> PrimExpr:  # noqa: A001
    """``x ** y`` for floats."""
    a, b = _coerce(x, y)
    _float_arg(a, "pow")
    return Call(a.dtype, "pow", (a, b))


def if_then_else(cond: Any, t: Any, f: Any) -> PrimExpr:
    """``t if cond else f``; only the chosen side is evaluated."""
    c = convert(cond)
    if not dt.is_bool(c.dtype):
        raise TEError(f"te.if_then_else: the condition `{c}` is {c.dtype}, not a bool condition")
    _same_kind_branches(t, f)
    a, b = _coerce(t, f)
    return Select(c, a, b)


def _same_kind_branches(t: Any, f: Any) -> None:
    """As TVM does, refuse an integer branch beside a float one (``te.if_then_else(c, 1,
    2.5)``, ``te.if_then_else(c, A_int[i], B_float[i])``): the result silently became a
    float. A Python int beside a float expression is fine (``te.if_then_else(c, A[i], 0)``:
    the 0 takes A's dtype); two Python numbers of different kinds (``1`` and ``2.5``) are
    not."""
    def kind(x: Any) -> tuple[str, str, bool]:  # (kind, dtype, is a Python int)
        x = getattr(x, "var", x)
        if isinstance(x, bool):
            return "bool", "bool", False
        if isinstance(x, int):
            return "int", "int32", True
        if isinstance(x, float):
            return "float", "float32", True
        e = convert(x)
        k = "float" if dt.is_float(e.dtype) else "bool" if dt.is_bool(e.dtype) else "int"
        return k, e.dtype, False

    (kt, dtt, lit_t), (kf, dtf, lit_f) = kind(t), kind(f)
    if {kt, kf} != {"int", "float"}:
        return
    if (lit_t and kt == "int" and not lit_f) or (lit_f and kf == "int" and not lit_t):
        return  # a Python int takes the float expression's dtype
    ints, floats = (t, f) if kt == "int" else (f, t)
    raise TEError(
        f"te.if_then_else: one branch is an integer ({ints!r}, {dtt if kt == 'int' else dtf}) "
        f"and the other a float ({floats!r}, {dtf if kt == 'int' else dtt}); the result "
        "would silently become a float. Make both the same dtype: "
        + (f"write {ints}.0, " if isinstance(ints, int) else "")
        + "cast the integer side "
        "with .astype(\"float32\") (or te.const(v, \"float32\")), or round the float side "
        "with .astype(\"int32\")")


def _logic(cls: type, conds: tuple[Any, ...], name: str) -> PrimExpr:
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = tuple(conds[0])
    if not conds:
        raise TEError(f"te.{name}() needs at least one condition")
    es = [convert(c) for c in conds]
    for e in es:
        if not dt.is_bool(e.dtype):
            raise TEError(f"te.{name}: `{e}` is {e.dtype}, not a condition")
    out = es[0]
    for e in es[1:]:
        out = chain(cls, out, e)  # a long te.all(...) stays shallow
    return out


def all(*conds: Any) -> PrimExpr:  # noqa: A001
    """True when every condition holds: ``te.all(i >= 1, i < n)``."""
    return _logic(And, conds, "all")


def any(*conds: Any) -> PrimExpr:  # noqa: A001
    """True when some condition holds."""
    return _logic(Or, conds, "any")


def max_value(dtype: str) -> PrimExpr:
    """The largest value of ``dtype`` (+inf is not used: this is the finite maximum)."""
    dtype = dt.check(dtype)
    if dt.is_float(dtype):
        return _const(float(np.finfo(dtype).max), dtype)
    if dt.is_bool(dtype):
        return _const(True, dtype)
    return _const(int(np.iinfo(dtype).max), dtype)


def min_value(dtype: str) -> PrimExpr:
    """The smallest value of ``dtype`` (the finite minimum for floats)."""
    dtype = dt.check(dtype)
    if dt.is_float(dtype):
        return _const(float(np.finfo(dtype).min), dtype)
    if dt.is_bool(dtype):
        return _const(False, dtype)
    return _const(int(np.iinfo(dtype).min), dtype)


def floordiv(a: Any, b: Any) -> PrimExpr:
    """``a // b`` rounding down (what Python's ``//`` does on te expressions)."""
    x, y = _coerce(a, b)
    check_divisor(FloorDiv, x, y)
    return FloorDiv(x, y)


def floormod(a: Any, b: Any) -> PrimExpr:
    """``a % b`` with the sign of ``b`` (Python's ``%``)."""
    x, y = _coerce(a, b)
    check_divisor(FloorMod, x, y)
    return FloorMod(x, y)


def truncdiv(a: Any, b: Any) -> PrimExpr:
    """Integer division rounding toward zero (C's ``/``)."""
    x, y = _coerce(a, b)
    check_divisor(_Div, x, y)
    return _Div(x, y)


def truncmod(a: Any, b: Any) -> PrimExpr:
    """Remainder with the sign of ``a`` (C's ``%``)."""
    x, y = _coerce(a, b)
    check_divisor(Mod, x, y)
    return Mod(x, y)
