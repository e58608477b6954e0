"""Back ends: one folder per target kind, each owning its passes, its codegen and its Module.

    tgt = parse_target("cuda-sim")
    tgt.backend.passes          # what this target runs after mlc.transform.PASSES
    f = build(func, tgt)        # common passes -> the target's passes -> codegen -> Module

=============  ==========================================================================
``llvm``       this CPU through LLVM (:mod:`mlc.target.llvm`)
``c``          the same, with the program printed as C (:mod:`mlc.target.c`)
``cuda``       CUDA C for NVIDIA GPUs (:mod:`mlc.target.cuda`; GPU passes in
               :mod:`mlc.target.gpu`)
``cuda-sim``   the same kernels simulated on the CPU (:mod:`mlc.target.cuda_sim`)
``vdla``       the course's accelerator, simulated (:mod:`mlc.target.vdla`)
=============  ==========================================================================

Adding a target: a folder with a ``BACKEND`` (:class:`Backend`), a member of
:class:`TargetKind` and a line in ``_BACKEND_MODULES``. Nothing outside this package branches
on the target kind.
"""

from __future__ import annotations

from typing import Any

from mlc.errors import CodegenError
from mlc.target.target import KINDS, Backend, Target, TargetError, TargetKind, backend, parse_target
from mlc.tir.deep import DEPTH, retry_deeper
from mlc.tir.expr import BufferLoad
from mlc.tir.functor import contains
from mlc.tir.stmt import BufferStore, PrimFunc
from mlc.transform import check_bounds, flatten_buffers, is_lowered, run_passes
from mlc.transform import lower as lower_common


def lower(func: PrimFunc, target: str | dict[str, Any] | Target | None = None) -> PrimFunc:
    """The common lowering passes, then (with a ``target``) that target's own passes: the
    program exactly as the target's codegen receives it."""
    tgt = None if target is None else parse_target(target)
    if not is_lowered(func):
        if tgt is not None and tgt.backend.common_passes is not None:
            func = run_passes(func, tgt.backend.common_passes, title="before lowering")
        else:
            func = lower_common(func)
    else:  # a script of plain loops: no lowering to do, but no access may leave its array
        func = check_bounds(func)
        if _multi_dim_access(func):  # A[1, I[i]]: each dimension's index checked on its own
            func = run_passes(func, [("flatten_buffers", flatten_buffers)])
    if tgt is None:
        return func
    return run_passes(func, tgt.backend.passes, title=f"before the {tgt.kind} passes")


def _multi_dim_access(func: PrimFunc) -> bool:
    return contains(func.body, lambda n: isinstance(n, (BufferLoad, BufferStore))
                    and len(n.indices) > 1)


def build(func: PrimFunc, target: str | dict[str, Any] | Target | None = "llvm") -> Any:
    """Lower ``func`` for ``target`` (:func:`lower`) and compile it: a Module you call with
    numpy arrays (the back end's ``module_class``)."""
    tgt = parse_target(target)
    lowered = retry_deeper(lambda: lower(func, tgt))  # its checks walk the program too
    try:
        return retry_deeper(lambda: tgt.backend.codegen(lowered, tgt))
    except RecursionError:
        raise CodegenError(
            f"the {tgt.kind} code generator ran out of recursion depth on {func.name!r}, "
            f"even on a deep stack ({DEPTH} levels): the program nests too deeply (thousands "
            "of stages or an expression thousands of levels deep); split it into several "
            "functions"
        ) from None


__all__ = [
    "KINDS",
    "Backend",
    "Target",
    "TargetError",
    "TargetKind",
    "backend",
    "build",
    "lower",
    "parse_target",
]
