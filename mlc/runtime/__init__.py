"""Running compiled code: ``Module`` (call with numpy arrays, time, show source), the JIT and
the parallel runtime."""

from mlc.runtime.module import Module, compile_lowered
from mlc.runtime.timer import TimeResult

__all__ = ["Module", "TimeResult", "compile_lowered"]
