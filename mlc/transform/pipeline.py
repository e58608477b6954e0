"""The lowering pipeline: one visible list of passes, each ``PrimFunc -> PrimFunc``.

Set ``MLC_TRACE=1`` (or call ``lower(func, trace=True)``) to print the program after every
pass, and ``MLC_DEBUG=1`` (or ``verify=True``) to run the IR verifier after every pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mlc import config
from mlc.errors import LoweringError, VerifyError
from mlc.tir.deep import DEPTH, retry_deeper
from mlc.tir.functor import contains
from mlc.tir.stmt import Block, BlockRealize, PrimFunc
from mlc.tir.verify import verify_well_formed
from mlc.transform.check_bounds import check_bounds
from mlc.transform.compact_buffers import compact_buffers
from mlc.transform.flatten_buffers import flatten_buffers
from mlc.transform.lower_blocks import lower_blocks
from mlc.transform.lower_cross_thread_reduction import lower_cross_thread_reduction
from mlc.transform.reroll import reroll_sums
from mlc.transform.simplify import simplify
from mlc.transform.unroll import unroll_loops
from mlc.transform.unswitch import unswitch_loops
from mlc.transform.vectorize import vectorize_loops

Pass = Callable[[PrimFunc], PrimFunc]

PASSES: list[tuple[str, Pass]] = [
    ("check_bounds", check_bounds),          # refuse accesses outside an array (no crash)
    ("lower_cross_thread_reduction", lower_cross_thread_reduction),  # reduce loop on threads
    ("lower_blocks", lower_blocks),          # blocks -> loops, ifs, allocations
    ("reroll_sums", reroll_sums),            # a 10,000-term sum built in Python -> a loop
    ("compact_buffers", compact_buffers),    # allocate intermediates small, where used
    ("flatten_buffers", flatten_buffers),    # A[i, j] -> A[i * m + j]
    ("simplify", simplify),                  # fold index arithmetic, drop proven guards
    ("vectorize_loops", vectorize_loops),    # vectorized loops -> Ramp/Broadcast vectors
    ("unroll_loops", unroll_loops),          # unrolled loops -> copies of the body
    ("unswitch_loops", unswitch_loops),      # guards an inner loop does not change: outside
    ("simplify", simplify),                  # tidy what vectorize and unroll left
]
"""The passes ``lower`` runs, in order, by name."""


def lower(
    func: PrimFunc, *, trace: bool | None = None, verify: bool | None = None
) -> PrimFunc:
    """Lower a block-level PrimFunc to the flat loop program codegen consumes: run
    :data:`PASSES` with :func:`run_passes`.

    ``trace`` (default: ``MLC_TRACE``) prints ``== after <pass> ==`` and the program after
    each pass; ``verify`` (default: ``MLC_DEBUG``) checks the program after each pass."""
    return run_passes(func, PASSES, trace=trace, verify=verify, title="before lowering")


def run_passes(
    func: PrimFunc,
    passes: Sequence[tuple[str, Pass]],
    *,
    trace: bool | None = None,
    verify: bool | None = None,
    title: str | None = None,
) -> PrimFunc:
    """Run named passes in order, each ``PrimFunc -> PrimFunc``: the common pipeline and a
    target's own passes (:attr:`mlc.target.Backend.passes`) both go through here, so
    ``MLC_TRACE`` and ``MLC_DEBUG`` see every pass of a build."""
    if not isinstance(func, PrimFunc):
        raise LoweringError(
            f"lower expects a PrimFunc (from te.create_prim_func or a Schedule's .mod), got "
            f"{type(func).__name__}"
        )
    trace = config.trace() if trace is None else trace
    verify = config.debug() if verify is None else verify
    if trace and title and passes:
        print(f"== {title} ==")
        print(func)
    for name, fn in passes:
        try:  # a program nested past Python's recursion limit is walked on a deep stack
            func = retry_deeper(lambda: fn(func))  # noqa: B023 (called at once)
        except RecursionError:
            raise LoweringError(
                f"the lowering pass {name!r} ran out of recursion depth on {func.name!r}, "
                f"even on a deep stack ({DEPTH} levels): the program nests too deeply "
                "(thousands of stages, each an allocation around the rest, or an expression "
                "thousands of levels deep). "
                "Inline stages into fewer blocks (compute_inline) or split the computation "
                "into several functions"
            ) from None
        if trace:
            print(f"== after {name} ==")
            print(func)
        if verify:
            _check(func, name)
    return func


def _check(func: PrimFunc, after: str) -> None:
    try:
        verify_well_formed(func)
    except VerifyError as err:
        raise LoweringError(
            f"the program is not well formed after the lowering pass {after!r}: {err}"
        ) from err


def is_lowered(func: PrimFunc) -> bool:
    """Has ``func`` been through :func:`lower` already (no blocks left)?"""
    return not contains(func.body, lambda n: isinstance(n, (Block, BlockRealize)))
