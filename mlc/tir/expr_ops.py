"""Building expressions: constants (``const``, ``convert``), the dtype coercion and checks
behind PrimExpr's Python operators (``_binary``, ``_true_div``, ``check_divisor``), the
shallow grouping of long associative chains (``chain``), what Python's ``if`` sees in
``a == b``, and small constant queries (``is_const_int``, ``as_int``).

Re-exported by :mod:`mlc.tir.expr`, which imports this module at its end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mlc.errors import MLCTypeError, ZeroDivisorError
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    Add,
    And,
    BinaryOp,
    Broadcast,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    Or,
    PrimExpr,
    Var,
)


def _imm_value(e: PrimExpr) -> int | float | None:
    """The Python value of a constant, looking through the Cast that mixing dtypes adds."""
    while isinstance(e, Cast):
        e = e.value
    if isinstance(e, (IntImm, FloatImm)):
        return e.value
    return None


def _equality_truth(a: PrimExpr, b: PrimExpr, op: str) -> bool:
    """What Python's ``if`` sees in ``a == b`` (an ``EQ`` node).

    * the same node on both sides: True (``x == x``);
    * two constants: their values compare (``A.shape[0] == 4``);
    * two distinct variables: False. Variables have identity semantics, and Python asks this
      question in ``v in [i, j]``, ``list.index(v)`` and other container lookups;
    * anything else (``i == 0``, ``i + 1 == j``) depends on values known only when the
      program runs, so Python cannot decide it: a typed error says what to write instead.
      (TVM answers False here, which silently takes the wrong branch.)
    """
    if a is b:
        return True
    va, vb = _imm_value(a), _imm_value(b)
    if va is not None and vb is not None:
        return va == vb
    if isinstance(a, Var) and isinstance(b, Var):
        return False
    raise MLCTypeError(
        f"`{a} {op} {b}` is a symbolic condition: its value is known only when the program "
        "runs, so Python's `if`/`and`/`or`/`not` cannot decide it. Inside te.compute use "
        f"te.if_then_else({a} {op} {b}, then_value, else_value); to compare constants, "
        "use int(...) on them; to ask whether two expressions are the same program, use "
        "tir.structural_equal(a, b)."
    )


# constructors


def const(value: int | float | bool, dtype: str | None = None) -> PrimExpr:
    """A constant; the dtype defaults to int32, float32 or bool from the Python value."""
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int):
            dtype = "int32" if -(2**31) <= value < 2**31 else "int64"
            check_int_fits(value, dtype, "a constant")
        elif isinstance(value, float):
            dtype = "float32"
        else:
            raise MLCTypeError(f"cannot make a constant of {value!r} ({type(value).__name__})")
    dtype = dt.check(dtype)
    if dt.is_float(dtype):
        return FloatImm(float(value), dtype)
    if dt.is_bool(dtype):
        return IntImm(int(bool(value)), dtype)
    if isinstance(value, float) and not value.is_integer():
        raise MLCTypeError(f"cannot make a {dtype} constant of {value!r}")
    return IntImm(int(value), dtype)


def convert(value: Any, dtype: str | None = None) -> PrimExpr:
    """Python numbers become constants (of ``dtype`` when given); expressions pass through."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, IterVar):
        return value.var
    if isinstance(value, (bool, int, float)):
        return const(value, dtype)
    if isinstance(value, np.generic):
        return const(value.item(), dtype or str(value.dtype))
    raise MLCTypeError(
        f"expected an expression or a number, got {type(value).__name__}: {value!r}"
    )


def _coerce(a: Any, b: Any) -> tuple[PrimExpr, PrimExpr]:
    """Make two operands expressions of one dtype (constants take the other side's dtype)."""
    a = a.var if isinstance(a, IterVar) else a
    b = b.var if isinstance(b, IterVar) else b
    if not isinstance(a, PrimExpr) and isinstance(b, PrimExpr):
        a = _const_like(a, b.dtype)
    elif not isinstance(b, PrimExpr) and isinstance(a, PrimExpr):
        b = _const_like(b, a.dtype)
    else:
        a, b = convert(a), convert(b)
    if a.dtype != b.dtype:
        target = dt.promote(a.dtype, b.dtype)
        a = a if a.dtype == target else _cast_lanes(a, target)
        b = b if b.dtype == target else _cast_lanes(b, target)
    return a, b


def _cast_lanes(e: PrimExpr, target: str) -> PrimExpr:
    n = dt.lanes(target)
    if dt.lanes(e.dtype) == 1 and n > 1:
        scalar = e if e.dtype == dt.element(target) else Cast(dt.element(target), e)
        return Broadcast(scalar, n)
    return Cast(target, e)


def _const_like(value: Any, dtype: str) -> PrimExpr:
    if isinstance(value, np.generic):  # np.float32(2.5) beside an int8: a float, not 2
        value = value.item()
    if isinstance(value, float) and not dt.is_float(dtype):
        return const(value, "float32" if dt.bits(dtype) <= 32 else "float64")
    if isinstance(value, bool) and not dt.is_bool(dtype):
        return const(int(value), dt.element(dtype))
    check_int_fits(value, dt.element(dtype), f"{value} beside an operand of dtype {dtype}")
    return const(value, dt.element(dtype))


def check_int_fits(value: Any, dtype: str, what: str) -> None:
    """Refuse a Python int that an integer ``dtype`` cannot hold (``X[i] + 1000`` with an
    int8 ``X``, ``te.const(1000, "int8")``): the compiled code would wrap it (to -24)
    without a word, where numpy raises OverflowError."""
    if not isinstance(value, int) or isinstance(value, bool) or not dt.is_int(dtype) \
            or dt.is_bool(dtype):
        return
    bits = dt.bits(dtype)
    lo, hi = (0, 2**bits - 1) if dt.is_uint(dtype) else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not lo <= value <= hi:
        raise MLCTypeError(f"{what}: {value} does not fit {dtype} (from {lo} to {hi}); "
                           "convert to a wider dtype first (x.astype(\"int64\")) or use a "
                           "value in that range")


def check_divisor(cls: type[BinaryOp], a: PrimExpr, b: PrimExpr) -> None:
    """Refuse an integer division or modulo by the constant 0 as a user writes it (``A[i] //
    0``, ``te.truncmod(x, 0)``): it has no value for any input. Only what a user builds is
    checked; a pass that folds a divisor to 0 (under a guard that keeps it from running,
    say) leaves it to the run-time check."""
    divisor = b.value if isinstance(b, Broadcast) else b
    if not (isinstance(divisor, IntImm) and divisor.value == 0):
        return
    if not dt.is_int(dt.element(a.dtype)):
        return
    op = {Div: "truncdiv", Mod: "truncmod", FloorDiv: "//", FloorMod: "%"}.get(cls)
    if op is None:
        return
    shown = f"{a} {op} 0" if op in ("//", "%") else f"{op}({a}, 0)"
    raise ZeroDivisorError(
        f"integer division by the constant 0: `{shown}` has no value for any input. Divide "
        "by a non-zero constant, or guard a divisor that may be zero: "
        "te.if_then_else(b != 0, a // b, 0)"
    )


BITS_HINT = (
    "mlc has no bitwise operators on integers; with arithmetic, for k >= 0: x << k is "
    "x * 2**k, x >> k is x // 2**k (floor division, an arithmetic shift), and "
    "x & (2**k - 1) is x % 2**k"
)


def no_bitwise(op: str, a: Any, b: Any = None) -> PrimExpr:
    """``<<``, ``>>``, ``^`` (and ``~`` on an integer): refused with the arithmetic that works."""
    shown = f"{op}{a}" if b is None else f"{a} {op} {b}"
    raise MLCTypeError(f"`{shown}`: {BITS_HINT}")


def _binary(cls: type[BinaryOp], a: Any, b: Any) -> PrimExpr:
    x, y = _coerce(a, b)
    check_divisor(cls, x, y)
    if cls in (And, Or):
        if not (dt.is_bool(x.dtype) and dt.is_bool(y.dtype)):
            raise MLCTypeError(
                f"& and | combine conditions (bool), got {x.dtype} and {y.dtype}: `{x}`, `{y}`"
                f". {BITS_HINT}"
            )
    if cls in (FloorDiv, FloorMod) and dt.is_float(x.dtype):
        if cls is FloorMod:
            raise MLCTypeError(f"% needs integers, got {x.dtype}: `{x} % {y}`")
        return Call(x.dtype, "floor", (Div(x, y),))
    if cls in _ASSOCIATIVE:
        return chain(cls, x, y)
    return cls(x, y)


# ---------------------------------------------------------------------------------------------
# long chains of one associative operator
#
# ``sum(A[i, j] for j in range(10000))`` builds ``((A[i,0] + A[i,1]) + A[i,2]) + ...``, a tree
# 10,000 levels deep that every recursive walk (printer, simplifier, verifier, codegen) would
# overflow Python's stack on. Chains built with the operators are therefore kept shallow as
# they grow: the first RUN terms stay exactly as written (left to right); after that, every
# RUN terms become a unit and units are merged pairwise like a binary counter, so the depth
# is about RUN + 2 * log2(terms / RUN) and building stays linear.
#
# The terms keep their order; only the grouping changes. For integers, min, max, & and |
# that changes nothing. For floats it changes the rounding of long sums and products: the
# result is that of a pairwise (tree) sum of left-to-right runs, whose error bound grows
# like log(n) instead of n for a strict left-to-right sum, so it may differ from numpy's
# left-to-right loop in the last bits (np.sum itself sums pairwise).

_ASSOCIATIVE = (Add, Mul, Min, Max, And, Or)
RUN = 32


@dataclass(frozen=True)
class _ChainInfo:
    """Bookkeeping hidden on the top node of a chain built by :func:`chain`.

    ``units`` are the finished, balanced groups (left to right) with their sizes in units;
    ``run`` counts the terms of the open run on top of them (0: the node is the fold of
    ``units`` itself); ``bottom`` is the first term when no unit exists yet."""

    units: tuple[tuple[PrimExpr, int], ...]
    run: int


def _info(e: PrimExpr, cls: type[BinaryOp], dtype: str) -> _ChainInfo | None:
    if type(e) is not cls or e.dtype != dtype:
        return None
    info: _ChainInfo | None = getattr(e, "_chain", None)
    return info


def _tag(e: PrimExpr, info: _ChainInfo) -> PrimExpr:
    object.__setattr__(e, "_chain", info)
    return e


def chain(cls: type[BinaryOp], x: PrimExpr, y: PrimExpr) -> PrimExpr:
    """``cls(x, y)`` for an associative operator, keeping long chains shallow (see above).
    ``x`` and ``y`` already have one dtype."""
    node = cls(x, y)
    left = _info(x, cls, node.dtype)
    if left is None:
        return _tag(node, _ChainInfo((), 2))
    run = left.run + 1
    if run < RUN:
        return _tag(node, _ChainInfo(left.units, run))
    # The open run is full: take its terms off the top and make them a unit.
    terms = [y]
    cur: PrimExpr = x
    for _ in range(run - 1 - (0 if left.units else 1)):
        terms.append(cur.b)  # type: ignore[attr-defined]
        cur = cur.a  # type: ignore[attr-defined]
    if not left.units:
        terms.append(cur)
    terms.reverse()
    unit = terms[0]
    for t in terms[1:]:
        unit = cls(unit, t)
    # Merge equal-sized units from the right, like carrying in a binary counter.
    units = list(left.units)
    size = 1
    while units and units[-1][1] == size:
        prev, _ = units.pop()
        unit, size = cls(prev, unit), size * 2
    units.append((unit, size))
    top = units[0][0]
    for u, _ in units[1:]:
        top = cls(top, u)
    return _tag(top, _ChainInfo(tuple(units), 0))


def _true_div(a: Any, b: Any) -> PrimExpr:
    x, y = _coerce(a, b)
    if not dt.is_float(x.dtype):
        raise MLCTypeError(
            f"`/` on integers ({x} / {y}) is ambiguous; use `//` for floor division or cast "
            "with .astype(\"float32\") first"
        )
    return Div(x, y)


def is_const_int(e: object, value: int | None = None) -> bool:
    """True when ``e`` is an integer constant (equal to ``value`` when given)."""
    return isinstance(e, IntImm) and (value is None or e.value == value)


def as_int(e: PrimExpr) -> int | None:
    """The Python int of a constant, or None for anything symbolic."""
    return e.value if isinstance(e, IntImm) else None


from mlc.tir.iter_var import IterVar  # noqa: E402  (iter_var builds on const/convert above)


def conjuncts(e: PrimExpr) -> list[PrimExpr]:
    """The terms of ``a && b && ...`` left to right (``[e]`` when ``e`` is no ``And``); a loop,
    not a recursion, so a guard of thousands of terms cannot exhaust the stack."""
    out: list[PrimExpr] = []
    todo = [e]
    while todo:
        x = todo.pop()
        if isinstance(x, And):
            todo += [x.b, x.a]
        else:
            out.append(x)
    return out
