"""Affine (linear) forms of integer expressions: ``sum(coef * atom) + const``.

An *atom* is anything that is not a sum or a product by a constant: a variable, ``x // 4``,
``x % 4``, ``i * j``, a load. ``i * 32 + j - i * 32 + 5`` becomes ``{j: 1} + 5``; like terms
are collected by structure (two ``x // 4`` nodes are the same atom), and the form is rebuilt
in a fixed order: terms in order of first appearance, positive ones first, constant last::

    i * 32 + j + 5      (not 5 + j + 32 * i)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, cast

from mlc.tir import dtype as dt
from mlc.tir.expr import (
    Add,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    IterVar,
    Mul,
    PrimExpr,
    Range,
    StringImm,
    Sub,
    Var,
)

Key = Any


def expr_key(e: Any) -> Key:
    """A hashable key equal for structurally equal expressions (variables by identity)."""
    if isinstance(e, Var):
        return ("Var", id(e))
    if isinstance(e, (IntImm, FloatImm, StringImm)):
        return (type(e).__name__, e.dtype, e.value)
    if isinstance(e, (PrimExpr, Range, IterVar)):
        parts: list[Any] = [type(e).__name__]
        for f in dataclasses.fields(cast(Any, e)):
            parts.append(expr_key(getattr(e, f.name)))
        return tuple(parts)
    if isinstance(e, tuple):
        return tuple(expr_key(x) for x in e)
    if isinstance(e, (int, float, str, bool)) or e is None:
        return e
    return ("id", id(e))  # buffers and other definitions: by identity


@dataclasses.dataclass
class Linear:
    """``sum(coef * atom for atom, coef in terms.values()) + const`` in ``dtype``."""

    dtype: str
    terms: dict[Key, tuple[PrimExpr, int]] = dataclasses.field(default_factory=dict)
    const: int = 0

    def copy(self) -> Linear:
        return Linear(self.dtype, dict(self.terms), self.const)

    def add_term(self, atom: PrimExpr, coef: int, key: Key | None = None) -> None:
        if coef == 0:
            return
        k = expr_key(atom) if key is None else key
        if k in self.terms:
            old_atom, old = self.terms[k]
            if old + coef == 0:
                del self.terms[k]
            else:
                self.terms[k] = (old_atom, old + coef)
        else:
            self.terms[k] = (atom, coef)

    def add(self, other: Linear, scale: int = 1) -> None:
        for k, (atom, coef) in other.terms.items():
            self.add_term(atom, coef * scale, k)
        self.const += other.const * scale

    def scaled(self, c: int) -> Linear:
        out = Linear(self.dtype)
        if c != 0:
            out.add(self, c)
        return out

    def is_const(self) -> bool:
        return not self.terms

    def gcd(self) -> int:
        """gcd of every coefficient and the constant (0 for the zero form)."""
        g = abs(self.const)
        for _, coef in self.terms.values():
            g = math.gcd(g, abs(coef))
        return g


def to_linear(e: PrimExpr) -> Linear:
    """Read ``e`` (an integer scalar expression) as a linear form."""
    lin = Linear(e.dtype)
    _collect(e, 1, lin)
    return lin


def _collect(e: PrimExpr, scale: int, lin: Linear) -> None:
    if isinstance(e, IntImm):
        lin.const += e.value * scale
    elif isinstance(e, Add):
        _collect(e.a, scale, lin)
        _collect(e.b, scale, lin)
    elif isinstance(e, Sub):
        _collect(e.a, scale, lin)
        _collect(e.b, -scale, lin)
    elif isinstance(e, Mul) and isinstance(e.b, IntImm):
        _collect(e.a, scale * e.b.value, lin)
    elif isinstance(e, Mul) and isinstance(e.a, IntImm):
        _collect(e.b, scale * e.a.value, lin)
    else:
        lin.add_term(e, scale)


def _term(atom: PrimExpr, coef: int, dtype: str) -> PrimExpr:
    return atom if coef == 1 else Mul(atom, IntImm(coef, dtype))


def fuse_div_mod(lin: Linear) -> Linear:
    """``(x // c) * c * m + (x % c) * m  ->  x * m``: the rule that undoes a split."""
    changed = True
    while changed:
        changed = False
        for k, (atom, coef) in list(lin.terms.items()):
            if not (isinstance(atom, FloorMod) and isinstance(atom.b, IntImm)):
                continue
            c = atom.b.value
            div_key = ("FloorDiv", expr_key(atom.a), expr_key(atom.b), atom.dtype)
            if div_key not in lin.terms or lin.terms[div_key][1] != coef * c:
                continue
            del lin.terms[k]
            del lin.terms[div_key]
            lin.add(to_linear(atom.a), coef)
            changed = True
            break
    return lin


def from_linear(lin: Linear) -> PrimExpr:
    """Build the expression of a linear form, positive terms first, the constant last."""
    dtype = lin.dtype
    pos = [(a, c) for a, c in lin.terms.values() if c > 0]
    neg = [(a, -c) for a, c in lin.terms.values() if c < 0]
    const = lin.const
    result: PrimExpr | None = None
    for atom, coef in pos:
        t = _term(atom, coef, dtype)
        result = t if result is None else Add(result, t)
    if result is None:
        if not neg:
            return IntImm(const, dtype)
        if const > 0:
            result, const = IntImm(const, dtype), 0
        else:
            atom, coef = neg.pop(0)
            result = Mul(atom, IntImm(-coef, dtype))
    for atom, coef in neg:
        result = Sub(result, _term(atom, coef, dtype))
    if const > 0:
        result = Add(result, IntImm(const, dtype))
    elif const < 0:
        result = Sub(result, IntImm(-const, dtype))
    return result


def is_scalar_int(e: PrimExpr) -> bool:
    return dt.is_int(e.dtype) and dt.lanes(e.dtype) == 1


__all__ = ["Linear", "expr_key", "to_linear", "from_linear", "fuse_div_mod", "FloorDiv"]
