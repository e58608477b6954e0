"""Whole-tensor arithmetic with numpy broadcasting: ``X - Mean`` on te tensors.

``Tensor.__add__`` and friends call :func:`broadcast_op`, which makes one ``te.compute``
named ``T_<op>`` (TVM's ``topi.add``/``subtract``/``multiply``/``divide``)::

    X = te.placeholder((n, 4)); M = te.placeholder((4,))
    Y = X - M          # Y[i, j] = X[i, j] - M[j]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlc.errors import TEError
from mlc.te.constructors import compute
from mlc.te.operation import Tensor, _shape_str
from mlc.tir.expr import IntImm, PrimExpr

_BROADCAST_FN: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
}


def _is_one(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


def _same_size(a: PrimExpr, b: PrimExpr) -> bool:
    if a is b:
        return True
    return isinstance(a, IntImm) and isinstance(b, IntImm) and a.value == b.value


def broadcast_op(a: Any, b: Any, op: str) -> Tensor:
    """``a <op> b`` elementwise with numpy broadcasting; either side may be a scalar."""
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    sa = a.shape if ta else ()
    sb = b.shape if tb else ()
    rank = max(len(sa), len(sb))
    pa = (None,) * (rank - len(sa)) + tuple(sa)
    pb = (None,) * (rank - len(sb)) + tuple(sb)
    out: list[PrimExpr] = []
    for d, (x, y) in enumerate(zip(pa, pb)):
        if x is None or (y is not None and _is_one(x)):
            out.append(y)  # type: ignore[arg-type]
        elif y is None or _is_one(y) or _same_size(x, y):
            out.append(x)
        else:
            na, nb = getattr(a, "name", a), getattr(b, "name", b)
            raise TEError(
                f"{op}: cannot broadcast {na!r} of shape {_shape_str(sa)} with {nb!r} of "
                f"shape {_shape_str(sb)}: dimension {d} is {x} against {y} (sizes must be "
                "equal or 1)"
            )

    def index(t: Tensor, idx: tuple[Any, ...]) -> PrimExpr:
        own = idx[rank - t.ndim :]
        return t[tuple(0 if _is_one(n) else i for n, i in zip(t.shape, own))]

    fn = _BROADCAST_FN[op]

    def body(*idx: Any) -> Any:
        x = index(a, idx) if ta else a
        y = index(b, idx) if tb else b
        return fn(x, y)

    return compute(tuple(out), body, name=f"T_{op}", tag="broadcast")
