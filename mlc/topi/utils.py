"""Small helpers TVM's ``topi.utils`` has, kept under the same names.

    from mlc.topi.utils import get_const_tuple
    shape = get_const_tuple(A.shape)          # (1024, 512): plain Python ints
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mlc.errors import MLCTypeError
from mlc.tir.expr import IntImm, IterVar, PrimExpr


def get_const_int(expr: Any) -> int:
    """The Python int of a constant size (``IntImm`` or an int); a typed error otherwise."""
    if isinstance(expr, bool):
        raise MLCTypeError(f"expected an integer constant, got the bool {expr!r}")
    if isinstance(expr, int):
        return expr
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, IterVar):
        expr = expr.var
    what = f"`{expr}`" if isinstance(expr, PrimExpr) else repr(expr)
    raise MLCTypeError(
        f"expected an integer constant, got {what}: a symbolic size (te.var) has no value "
        "until the function is called with arrays"
    )


def get_const_tuple(in_tuple: Iterable[Any]) -> tuple[int, ...]:
    """A shape of constants as a tuple of Python ints: ``get_const_tuple(A.shape)``. TVM
    leaves symbolic entries as they are; here they raise, because a shape with a ``te.var``
    cannot size a numpy array (use ``get_const_int`` per dimension to see which one)."""
    return tuple(get_const_int(x) for x in in_tuple)


__all__ = ["get_const_int", "get_const_tuple"]
