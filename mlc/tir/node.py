"""The decorator of every IR node: a frozen dataclass with identity equality and hash
(used by expr.py, iter_var.py and stmt.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**kwargs: Any) -> Any:
        return lambda fn: fn


T = TypeVar("T")


@dataclass_transform(frozen_default=True, eq_default=False)
def _node(cls: type[T]) -> type[T]:
    """Frozen dataclass with identity equality/hash (``==`` is an IR operator here); the
    decorator of every IR node, expressions here and statements in stmt.py."""
    return dataclass(frozen=True, eq=False, repr=False)(cls)
