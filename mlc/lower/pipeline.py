"""The lowering pipeline: one visible list of passes, each ``PrimFunc -> PrimFunc``.

Set ``MLC_TRACE=1`` (or call ``lower(func, trace=True)``) to print the program after every
pass, and ``MLC_DEBUG=1`` (or ``verify=True``) to run the IR verifier after every pass.
"""

from __future__ import annotations

from collections.abc import Callable

from mlc import config
from mlc.errors import LoweringError
from mlc.lower.check_bounds import check_bounds
from mlc.lower.compact_buffers import compact_buffers
from mlc.lower.flatten_buffers import flatten_buffers
from mlc.lower.lower_blocks import lower_blocks
from mlc.lower.simplify import simplify
from mlc.lower.unroll import unroll_loops
from mlc.lower.vectorize import vectorize_loops
from mlc.tir.stmt import PrimFunc

Pass = Callable[[PrimFunc], PrimFunc]

PASSES: list[tuple[str, Pass]] = [
    ("check_bounds", check_bounds),          # refuse accesses outside an array (no crash)
    ("lower_blocks", lower_blocks),          # blocks -> loops, ifs, allocations
    ("compact_buffers", compact_buffers),    # allocate intermediates small, where used
    ("flatten_buffers", flatten_buffers),    # A[i, j] -> A[i * m + j]
    ("simplify", simplify),                  # fold index arithmetic, drop proven guards
    ("vectorize_loops", vectorize_loops),    # vectorized loops -> Ramp/Broadcast vectors
    ("unroll_loops", unroll_loops),          # unrolled loops -> copies of the body
    ("simplify", simplify),                  # tidy what vectorize and unroll left
]
"""The passes ``lower`` runs, in order, by name."""


def lower(
    func: PrimFunc, *, trace: bool | None = None, verify: bool | None = None
) -> PrimFunc:
    """Lower a block-level PrimFunc to the flat loop program codegen consumes.

    ``trace`` (default: ``MLC_TRACE``) prints ``== after <pass> ==`` and the program after
    each pass; ``verify`` (default: ``MLC_DEBUG``) checks the program after each pass."""
    if not isinstance(func, PrimFunc):
        raise LoweringError(
            f"lower expects a PrimFunc (from te.create_prim_func or a Schedule's .mod), got "
            f"{type(func).__name__}"
        )
    trace = config.trace() if trace is None else trace
    verify = config.debug() if verify is None else verify
    checker = _verifier() if verify else None
    if trace:
        print("== before lowering ==")
        print(func)
    for name, fn in PASSES:
        func = fn(func)
        if trace:
            print(f"== after {name} ==")
            print(func)
        if checker is not None:
            checker(func, name)
    return func


def _verifier() -> Callable[[PrimFunc, str], None] | None:
    try:
        from mlc.tir.verify import verify_well_formed
    except ImportError:  # the verifier is optional
        return None

    def check(func: PrimFunc, after: str) -> None:
        try:
            verify_well_formed(func)
        except Exception as err:
            raise LoweringError(
                f"the program is not well formed after the lowering pass {after!r}: {err}"
            ) from err

    return check
