"""Iteration domains of the loop IR: ``Range`` (a half-open interval), ``IterKind`` and
``IterVar`` (a variable with a domain and a kind, standing for its variable in arithmetic).

Re-exported by :mod:`mlc.tir.expr`, which imports this module at its end.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from mlc.tir.expr import ExprLike, PrimExpr, Var
from mlc.tir.node import _node


@_node
class Range:
    """The half-open interval ``[min, min + extent)``."""

    min: PrimExpr
    extent: PrimExpr

    @staticmethod
    def from_min_extent(min: ExprLike, extent: ExprLike) -> Range:
        return Range(convert(min), convert(extent))

    def __repr__(self) -> str:
        return f"Range({self.min}, {self.extent})"


class IterKind(enum.Enum):
    """What a block iteration variable means: a point of the output (SPATIAL), a step of a
    reduction (REDUCE), or a step that must run in order (ORDERED, used by scan)."""

    SPATIAL = "S"
    REDUCE = "R"
    ORDERED = "O"
    OPAQUE = "X"


@_node
class IterVar:
    """A variable with a domain and a kind: block iteration variables, te axes."""

    var: Var
    dom: Range
    kind: IterKind = IterKind.SPATIAL

    @property
    def name(self) -> str:
        return self.var.name

    def __repr__(self) -> str:
        return f"IterVar({self.var.name}, [{self.dom.min}, {self.dom.extent}), {self.kind.name})"

    if TYPE_CHECKING:  # arithmetic forwards to ``var`` (set below), as in TVM: ``y + ky``
        def __add__(self, other: Any) -> PrimExpr: ...
        def __radd__(self, other: Any) -> PrimExpr: ...
        def __sub__(self, other: Any) -> PrimExpr: ...
        def __rsub__(self, other: Any) -> PrimExpr: ...
        def __mul__(self, other: Any) -> PrimExpr: ...
        def __rmul__(self, other: Any) -> PrimExpr: ...
        def __floordiv__(self, other: Any) -> PrimExpr: ...
        def __rfloordiv__(self, other: Any) -> PrimExpr: ...
        def __mod__(self, other: Any) -> PrimExpr: ...
        def __rmod__(self, other: Any) -> PrimExpr: ...
        def __neg__(self) -> PrimExpr: ...
        def __lt__(self, other: Any) -> PrimExpr: ...
        def __le__(self, other: Any) -> PrimExpr: ...
        def __gt__(self, other: Any) -> PrimExpr: ...
        def __ge__(self, other: Any) -> PrimExpr: ...

    def __hash__(self) -> int:
        return id(self)


def _forward_to_var(name: str) -> Any:
    def op(self: IterVar, *args: Any) -> Any:
        return getattr(self.var, name)(*args)

    return op


# An IterVar in arithmetic stands for its variable, as in TVM: `y + ky` for a reduce axis ky.
for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__neg__",
              "__lt__", "__le__", "__gt__", "__ge__"):  # fmt: skip
    setattr(IterVar, _name, _forward_to_var(_name))


from mlc.tir.expr_ops import convert  # noqa: E402  (expr_ops builds on IterVar above)
