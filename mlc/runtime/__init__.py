"""Running compiled code: ``Module`` (call with numpy arrays, time, show source), the JIT, the
parallel runtime, argument checks and timing. Nothing here lowers or generates code: a target
(:mod:`mlc.target`) builds the Module."""

from mlc.runtime.module import Module
from mlc.runtime.timer import TimeResult

__all__ = ["Module", "TimeResult"]
