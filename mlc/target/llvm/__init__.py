"""The ``"llvm"`` target: this CPU, through LLVM (llvmlite), JIT-compiled with MCJIT.

Codegen writes LLVM IR (:mod:`mlc.target.llvm.codegen`: scalars and vectors in
:mod:`~mlc.target.llvm.expr`, math intrinsics in :mod:`~mlc.target.llvm.intrin`, parallel
loops outlined for libgomp in :mod:`~mlc.target.llvm.parallel`); :func:`compile_lowered`
JIT-compiles it into a :class:`mlc.runtime.Module`.
"""

from __future__ import annotations

from typing import Any

from mlc.runtime.module import Module
from mlc.target.llvm.build import compile_lowered
from mlc.target.llvm.codegen import LLVMSource, codegen_llvm
from mlc.target.target import Backend, Target, TargetKind
from mlc.tir.stmt import PrimFunc


def _build(func: PrimFunc, target: Target) -> Any:
    return compile_lowered(func, target, func.name)


BACKEND = Backend(
    kind=TargetKind.LLVM,
    description="this CPU, through LLVM",
    codegen=_build,
    module_class=Module,
    features=frozenset({"cpu", "parallel", "vector"}),
)

__all__ = ["BACKEND", "LLVMSource", "codegen_llvm", "compile_lowered"]
