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


class ForbiddenCallError(CodegenError):
    """The compiled program would call a function it may not: built with
    ``allow_calls=False`` (what the autograder does with a student's exported program), only
    the math functions of the intrinsic table and mlc's own runtime helpers may be called.
    The message names the symbol."""


class RuntimeCheckError(MLCError, RuntimeError):
    """Compiled code found, while running, something that has no answer: an integer
    division by zero, an index outside an array. The message names the expression and the
    value; the outputs of that call are partial."""


class IntegerDivisionError(RuntimeCheckError, ZeroDivisionError):
    """An integer division or modulo by zero (or ``INT_MIN // -1``) in compiled code."""


class ZeroDivisorError(TEError, ZeroDivisionError):
    """An integer division or modulo by the constant 0, refused when the expression is
    built (``A[i] // 0``): it has no answer for any input."""


class IndexOutOfBoundsError(RuntimeCheckError, IndexError):
    """A compiled kernel's index (read from data, or over a symbolic size) left its array."""


class AllocationError(RuntimeCheckError, MemoryError):
    """Compiled code could not allocate an intermediate buffer (the machine, or the
    process's memory limit, has not that much); the code that uses it did not run."""


class PackedFuncError(MLCError, RuntimeError):
    """A packed function (``mlc.register_func``, called by ``tir.call_packed``) failed: its
    name is not registered, it got arguments it cannot take, or it raised. The message
    names the function; an exception it raised is the ``__cause__``."""


class TargetError(MLCError, ValueError):
    """A target string or dict that mlc cannot compile for."""


class DeviceError(MLCError, RuntimeError):
    """The GPU (or its driver) is missing or refused an operation."""


class TuneError(MLCError, ValueError):
    """A search space or tuning request that cannot work (empty knob, unknown knob...)."""


class EvaluationError(MLCError):
    """The tensor expression cannot be evaluated (a missing input, an out-of-bounds read)."""


class InterpreterError(MLCError):
    """The program did something the interpreter refuses (an out-of-bounds access, a
    construct it does not know)."""


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


class ScriptError(MLCError, SyntaxError):
    """A TVMScript-style program (``@T.prim_func``, ``@ir_module``, ``@R.function``) that mlc
    cannot read. The message gives the line and column in the student's source, shows the
    line, and says what was expected there."""


class VDLAError(MLCError):
    """The VDLA accelerator refused a program. The message names the instruction (its index
    and its text) and says what would work."""


class VDLAProgramError(VDLAError, ValueError):
    """An instruction whose fields cannot be executed: a negative size, a dependency flag
    for a module that does not exist, a micro-op range that is empty or unloaded."""


class VDLAAccessError(VDLAError, IndexError):
    """An instruction reads or writes outside an on-chip buffer or a DRAM region."""


class VDLADeadlockError(VDLAError):
    """The modules wait for each other forever: a POP whose token no instruction pushes, or
    a token pushed that no instruction ever pops."""


class VDLARaceError(VDLAError):
    """Two modules touch the same on-chip buffer at the same time, one of them writing: a
    dependency token is missing between them."""


class TraceError(ScheduleError, ValueError):
    """A schedule trace (``sch.trace.as_json()``) that cannot be replayed: malformed JSON, an
    unknown instruction, a missing or extra argument, a handle used before it is defined, or
    a primitive that refuses the recorded arguments. The message names the instruction."""


class GPUCheckError(RuntimeCheckError):
    """``cuda-sim``'s checks (:mod:`mlc.target.cuda_sim.checks`) found a bug a real GPU would
    not report: a data race, a read of shared memory nothing wrote, an index outside a
    buffer, a barrier not every thread reaches. The message names the kernel, the buffer, the
    element, the threads (blockIdx, threadIdx) and the line of the loop IR; ``findings``
    holds every problem found (:class:`mlc.target.cuda_sim.check.Finding`), for
    :func:`mlc.viz.gpu.race_picture`."""

    def __init__(self, message: str, findings: list | None = None) -> None:
        super().__init__(message)
        self.findings = list(findings or [])


class RaceError(GPUCheckError):
    """Two threads touch the same element between the same two barriers (or from different
    blocks), one of them writing: the result depends on which runs first."""


class UninitializedReadError(GPUCheckError):
    """A thread read an element of shared memory that no thread of its block has written
    since the kernel began (shared memory starts as garbage on a GPU)."""


class GPUIndexError(GPUCheckError, IndexOutOfBoundsError):
    """A GPU thread's index left its buffer (global, shared or local)."""


class BarrierDivergenceError(GPUCheckError):
    """``__syncthreads()`` reached by some threads of a block and not by others: on a GPU
    the block hangs (or worse)."""


class ShuffleDivergenceError(BarrierDivergenceError):
    """A warp shuffle (``__shfl_down_sync``) that a lane named in its mask does not reach,
    or whose lanes pass different masks: on a GPU the result is undefined (or the warp
    hangs)."""


class ClusterError(MLCError, RuntimeError):
    """A Dask cluster that cannot be used: the scheduler does not answer, no worker can take
    the work, or ``dask.distributed`` is not installed. The message says what to check."""


class ExportError(MLCError, RuntimeError):
    """A compiled module that cannot be written as a library or read back: no C compiler or
    linker (the message says which package to install), a module that calls Python
    (packed functions), a file that is not an mlc library."""


class PrecisionWarning(UserWarning):
    """A computation that may lose precision without an error: a float16 reduction long
    enough that its float16 accumulator stops counting (2048 + 1 is 2048 in float16). The
    message names the block and the fix (accumulate in float32 with ``.astype``)."""
