"""Small builders for hand-written lowered PrimFuncs (the LLVM backend's input form)."""

from __future__ import annotations

from collections.abc import Callable

from mlc.runtime import Module
from mlc.target.llvm.build import compile_lowered
from mlc.tir import Buffer, BufferStore, For, ForKind, PrimExpr, PrimFunc, SizeVar, Stmt, Var, const


def loop(var: Var, extent: PrimExpr | int, body: Stmt, kind: ForKind = ForKind.SERIAL) -> For:
    return For(var, const(0, var.dtype), _expr(extent, var.dtype), kind, body)


def _expr(e: PrimExpr | int, dtype: str) -> PrimExpr:
    return const(e, dtype) if isinstance(e, int) else e


def build(params: tuple[Buffer, ...], body: Stmt, name: str = "kernel") -> Module:
    return compile_lowered(PrimFunc(params, body, name))


def unary(
    fn: Callable[[PrimExpr], PrimExpr], src: str = "float32", dst: str | None = None
) -> Module:
    """``B[i] = fn(A[i])`` for ``i < n`` (``n`` symbolic)."""
    n = SizeVar("n", "int32")
    A = Buffer("A", (n,), src)
    B = Buffer("B", (n,), dst or src)
    i = Var("i", "int32")
    return build((A, B), loop(i, n, BufferStore(B, fn(A[i]), (i,))))


def binary(
    fn: Callable[[PrimExpr, PrimExpr], PrimExpr], src: str = "float32", dst: str | None = None
) -> Module:
    """``C[i] = fn(A[i], B[i])`` for ``i < n``."""
    n = SizeVar("n", "int32")
    A = Buffer("A", (n,), src)
    B = Buffer("B", (n,), src)
    C = Buffer("C", (n,), dst or src)
    i = Var("i", "int32")
    return build((A, B, C), loop(i, n, BufferStore(C, fn(A[i], B[i]), (i,))))
