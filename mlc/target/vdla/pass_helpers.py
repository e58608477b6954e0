"""Helpers shared by the VDLA lowering passes: instruction calls, GEMM call names, tile shapes."""

from __future__ import annotations

from typing import Any

from mlc.target.vdla.affine import (
    scope_of,
)
from mlc.tir.expr import (
    Call,
    PrimExpr,
    const,
)
from mlc.tir.stmt import (
    Buffer,
    Evaluate,
    Stmt,
)

GEMM_CALLS = ("fuse_gemm8x8_add", "gemm8x8")


def _call(name: str, *args: Any) -> Stmt:
    return Evaluate(Call("int32", name, tuple(a if isinstance(a, PrimExpr) else const(a)
                                              for a in args)))


def _tile_shape(buf: Buffer) -> tuple[int, ...]:
    from mlc.vdla.config import DEFAULT

    scope = scope_of(buf)
    if scope is None or len(buf.shape) != 2:
        return tuple(1 for _ in buf.shape)
    return DEFAULT.tile_shape(scope)
