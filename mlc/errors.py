"""Every error mlc raises on purpose, in one place.

Errors are written for a student: they name the block, loop, array or argument, show the
code where that helps, and say what would work instead.
"""

from __future__ import annotations


class MLCError(Exception):
    """Base class of the errors mlc raises for a user's mistake."""


class MLCTypeError(MLCError, TypeError):
    """A value of the wrong kind: a dtype that does not exist, an operand that is not an expr."""


class TEError(MLCError, ValueError):
    """A tensor expression that cannot be built (wrong number of indices, bad reduce axis...)."""


class ScheduleError(MLCError):
    """A schedule primitive was refused because it would change the program's meaning or is
    not defined for the loops/blocks it was given. The message prints the loop nest."""


class LoweringError(MLCError):
    """The program cannot be lowered (e.g. a symbolic extent where a constant is needed)."""


class VerifyError(MLCError):
    """The loop IR is not well formed (a pass produced a broken program)."""


class CodegenError(MLCError):
    """The backend cannot emit code for this program."""


class GraphError(MLCError, ValueError):
    """A computational graph that cannot be built or compiled (operand shapes that do not
    match, an unknown op, an input missing at run time). The message names the op and its
    operands with their shapes."""


class ArgumentError(MLCError, ValueError):
    """A compiled function was called with arrays that do not fit its parameters (wrong
    shape, not contiguous, read-only output). The message names the argument and says what
    the function expects."""


class ArgumentTypeError(ArgumentError, TypeError):
    """A compiled function was called with the wrong number of arguments, something that is
    not a numpy array, or an array of the wrong dtype."""
