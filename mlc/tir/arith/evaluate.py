"""The one evaluator of scalar expressions: the simplifier's tests, the runtime's argument
checks and the GPU launch sizes all use it.

    evaluate_int((i * 32 + j) // 32, {i: 3, j: 5})   # -> 3
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mlc.errors import MLCTypeError
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
    Cast,
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
    Select,
    Sub,
    Var,
)
from mlc.tir.float_int import float_to_int


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


_BINARY: dict[type, Any] = {
    Add: lambda x, y: x + y,
    Sub: lambda x, y: x - y,
    Mul: lambda x, y: x * y,
    FloorDiv: lambda x, y: x // y,
    FloorMod: lambda x, y: x % y,
    Min: min,
    Max: max,
    LT: lambda x, y: x < y,
    LE: lambda x, y: x <= y,
    GT: lambda x, y: x > y,
    GE: lambda x, y: x >= y,
    EQ: lambda x, y: x == y,
    NE: lambda x, y: x != y,
}


def evaluate_int(expr: PrimExpr, env: dict[Var, Any]) -> Any:
    """The value of ``expr`` when each variable ``v`` has the value ``env[v]`` (Python ints
    and floats, bools for conditions). Raises MLCTypeError for a free variable not in env."""
    values = {id(v): x for v, x in env.items()}
    return _eval(expr, values)


def evaluate_known(expr: PrimExpr | int, values: Mapping[int, Any]) -> Any | None:
    """``evaluate_int`` with ``values`` keyed by ``id(var)`` (the runtime's argument maps), or
    None where the value is not known: a variable without a value, a division by zero."""
    if isinstance(expr, int):
        return expr
    try:
        return _eval(expr, dict(values))
    except (MLCTypeError, ZeroDivisionError):
        return None


def _eval(e: PrimExpr, env: dict[int, Any]) -> Any:  # noqa: C901 - one case per node kind
    if isinstance(e, IntImm):
        return bool(e.value) if dt.is_bool(e.dtype) else e.value
    if isinstance(e, FloatImm):
        return e.value
    if isinstance(e, Var):
        if id(e) not in env:
            raise MLCTypeError(f"evaluate_int: no value for the variable {e.name}")
        return env[id(e)]
    if isinstance(e, (And, Or)):
        a = _eval(e.a, env)
        if isinstance(e, And):
            return bool(a) and bool(_eval(e.b, env))
        return bool(a) or bool(_eval(e.b, env))
    if isinstance(e, Div):
        a, b = _eval(e.a, env), _eval(e.b, env)
        return a / b if dt.is_float(e.dtype) else _trunc_div(a, b)
    if isinstance(e, Mod):
        a, b = _eval(e.a, env), _eval(e.b, env)
        return a - _trunc_div(a, b) * b if not dt.is_float(e.dtype) else math.fmod(a, b)
    if type(e) in _BINARY:
        return _BINARY[type(e)](_eval(e.a, env), _eval(e.b, env))  # type: ignore[attr-defined]
    if isinstance(e, Not):
        return not _eval(e.a, env)
    if isinstance(e, Select):
        return _eval(e.true_value if _eval(e.condition, env) else e.false_value, env)
    if isinstance(e, Cast):
        v = _eval(e.value, env)
        if dt.is_bool(e.dtype):
            return bool(v)
        if dt.is_float(e.dtype):
            return float(v)
        if isinstance(v, float):
            return float_to_int(v, e.dtype)
        return int(v)
    if isinstance(e, Let):
        inner = dict(env)
        inner[id(e.var)] = _eval(e.value, env)
        return _eval(e.body, inner)
    raise MLCTypeError(f"evaluate_int cannot evaluate {type(e).__name__}: {e}")
