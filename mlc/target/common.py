"""Helpers every backend shares."""

from __future__ import annotations

import re

from mlc.errors import CodegenError
from mlc.tir.expr import PrimExpr
from mlc.tir.stmt import Buffer


def c_name(name: str) -> str:
    """``name`` as a C/LLVM identifier (``"my-kernel"`` -> ``"my_kernel"``)."""
    s = re.sub(r"\W", "_", name) or "main"
    return "_" + s if s[0].isdigit() else s


def flat_index(buffer: Buffer, indices: tuple[PrimExpr, ...]) -> PrimExpr:
    """One index from several, row-major (or by ``buffer.strides``), for a buffer that
    lowering left multi-dimensional. A single index is returned as it is."""
    if len(indices) == 1:
        return indices[0]
    if len(indices) != len(buffer.shape):
        raise CodegenError(
            f"buffer {buffer.name!r} has {len(buffer.shape)} dimensions but is indexed "
            f"with {len(indices)}"
        )
    if buffer.strides:
        flat: PrimExpr = indices[0] * buffer.strides[0]
        for i, s in zip(indices[1:], buffer.strides[1:]):
            flat = flat + i * s
        return flat
    flat = indices[0]
    for i, extent in zip(indices[1:], buffer.shape[1:]):
        flat = flat * extent + i
    return flat
