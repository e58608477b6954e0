"""Running compiled code: ``Module`` (call with numpy arrays, time, show source), the JIT, the
parallel runtime, argument checks and timing. Nothing here lowers or generates code: a target
(:mod:`mlc.target`) builds the Module. ``load_module`` reads back a library that
``Module.export_library``/``save`` wrote (:mod:`mlc.runtime.export` writes,
:mod:`mlc.runtime.load` reads)."""

from typing import Any

from mlc.runtime.module import Module
from mlc.runtime.timer import TimeResult

__all__ = ["Module", "TimeResult", "load_module"]


def load_module(path: Any, cc: str | None = None) -> Any:
    """A Module (or a graph module) from a ``.so`` that ``export_library`` wrote, or a ``.o``
    that ``save`` wrote (linked with ``cc`` first): it calls as the exported one did."""
    from mlc.runtime.load import load_module as load

    return load(path, cc)
