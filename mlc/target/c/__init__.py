"""The ``"c"`` target: the same machine code as ``"llvm"``, plus the program printed as C
(``get_source("c")``, :mod:`mlc.target.c.codegen`) for students who read C more easily."""

from __future__ import annotations

from mlc.runtime.module import Module
from mlc.target.c.codegen import codegen_c
from mlc.target.llvm.build import compile_lowered
from mlc.target.target import Backend, Target, TargetKind
from mlc.tir.stmt import PrimFunc


def _build(func: PrimFunc, target: Target) -> Module:
    return compile_lowered(func, target, func.name, render_c=codegen_c)


BACKEND = Backend(
    kind=TargetKind.C,
    description="this CPU, through LLVM, with the C source kept",
    codegen=_build,
    module_class=Module,
    features=frozenset({"cpu", "parallel", "vector"}),
)

__all__ = ["BACKEND"]
