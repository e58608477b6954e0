"""``T``: the names a TensorIR script uses (``T.prim_func``, ``T.Buffer``, ``T.block``...).

Only ``T.prim_func`` does anything: it reads the decorated function's source. The other
names exist so that Python can evaluate a function's parameter annotations
(``A: T.Buffer((128,), "float32")`` runs when the ``def`` runs) and so that editors find
them; inside the body they are read, never called.
"""

from __future__ import annotations

from typing import Any

from mlc.errors import ScriptError
from mlc.script.ir_module import prim_func

__all__ = ["prim_func", "Buffer", "handle"]


class _BufferType:
    """``T.Buffer((128, 128), "float32")`` and ``T.Buffer[(128,), "float32"]`` in an
    annotation: a description the parser re-reads from the source."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs

    def __class_getitem__(cls, item: Any) -> _BufferType:
        return cls(item)

    def __repr__(self) -> str:
        return f"T.Buffer{self.args}"


Buffer = _BufferType


class handle:  # noqa: N801 - TVMScript's spelling
    """``x: T.handle``: a parameter whose shape ``T.match_buffer`` gives."""


def _only_in_scripts(name: str) -> Any:
    def f(*args: Any, **kwargs: Any) -> Any:
        raise ScriptError(
            f"T.{name}(...) only has a meaning inside a @T.prim_func, which mlc reads without "
            "running; it cannot be called directly"
        )

    f.__name__ = name
    return f


class _Namespace:
    def __init__(self, prefix: str) -> None:
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _only_in_scripts(f"{self._prefix}{name}")


axis = _Namespace("axis.")


def __getattr__(name: str) -> Any:
    # T.block, T.grid, T.float32, T.exp...: placeholders for editors and annotations.
    if name.startswith("__"):
        raise AttributeError(name)
    return _only_in_scripts(name)
