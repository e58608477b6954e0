"""Backends: a lowered PrimFunc becomes code. ``llvm`` (through llvmlite) is the one that runs."""

from mlc.codegen.llvm import LLVMSource, codegen_llvm
from mlc.codegen.target import Target, TargetError, parse_target

__all__ = ["LLVMSource", "Target", "TargetError", "codegen_llvm", "parse_target"]
