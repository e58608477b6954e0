"""``flatten_buffers``: give every buffer one dimension, as memory has.

A buffer of shape ``(n, m)`` stored row-major holds ``A[i, j]`` at offset ``i * m + j``;
with explicit strides (``storage_align``) the offset is ``i * strides[0] + j * strides[1]``::

    A = Buffer("A", (n, 64))                 A_flat = Buffer("A", (n * 64,), data=A.data)
    B[i, j] = A[i, j] * 2.0         ->       B_flat[i * 64 + j] = A_flat[i * 64 + j] * 2.0

The flat buffer shares the original's ``data`` variable (codegen identifies memory by it),
and there is one flat buffer per original buffer. The function's ``params`` keep their
multi-dimensional shapes: that is how the runtime checks the arrays it is given.
"""

from __future__ import annotations

from typing import Any

from mlc.tir.expr import BufferLoad, Cast, IntImm, PrimExpr, const, convert
from mlc.tir.functor import IRMutator
from mlc.tir.stmt import Allocate, Buffer, BufferStore, PrimFunc, Stmt


def flatten_buffers(func: PrimFunc) -> PrimFunc:
    """Rewrite every load, store and allocation of ``func`` to use 1-D buffers."""
    return func.with_body(_Flattener().visit(func.body))


def buffer_strides(buf: Buffer) -> tuple[PrimExpr, ...]:
    """The element stride of each dimension: ``buf.strides`` if given, else row-major."""
    if buf.strides:
        return tuple(convert(s) for s in buf.strides)
    strides: list[PrimExpr] = []
    acc: PrimExpr = const(1)
    for dim in reversed(buf.shape):
        strides.append(acc)
        acc = _mul(acc, dim)
    return tuple(reversed(strides))


def buffer_numel(buf: Buffer) -> PrimExpr:
    """How many elements the buffer's memory holds (``strides[0] * shape[0]`` when strided)."""
    if not buf.shape:
        return const(1)
    if buf.strides:
        return _mul(buf.strides[0], buf.shape[0])
    total: PrimExpr = const(1)
    for dim in buf.shape:
        total = _mul(total, dim)
    return total


INT32_MAX = 2**31 - 1


def needs_int64(buf: Buffer) -> bool:
    """Can a flat offset into ``buf`` exceed int32? Yes for more than 2**31 - 1 elements, and
    for a symbolic size (which may be anything when the function is called)."""
    numel = buffer_numel(buf)
    return not isinstance(numel, IntImm) or numel.value > INT32_MAX


def _int64(e: PrimExpr) -> PrimExpr:
    if e.dtype == "int64":
        return e
    if isinstance(e, IntImm):
        return IntImm(e.value, "int64")
    return Cast("int64", e)


def flat_index(buf: Buffer, indices: tuple[PrimExpr, ...]) -> PrimExpr:
    """``sum(index_d * stride_d)`` for the buffer's strides, computed in int64 when an offset
    could exceed int32 (:func:`needs_int64`), so ``A[n // 2, 3]`` of a 70000 x 70000 array
    reads element 2450000003, not a wrapped-around one."""
    if not indices:
        return const(0)
    wide = needs_int64(buf)
    total: PrimExpr | None = None
    for idx, stride in zip(indices, buffer_strides(buf)):
        idx, stride = convert(idx), convert(stride)
        if wide:
            idx, stride = _int64(idx), _int64(stride)
        term = _mul(idx, stride)
        total = term if total is None else total + term
    assert total is not None
    return total


def _mul(a: PrimExpr | int, b: PrimExpr | int) -> PrimExpr:
    """``a * b`` without the noise of multiplying by one or folding obvious constants."""
    a, b = convert(a), convert(b)
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return const(a.value * b.value, a.dtype)
    if isinstance(b, IntImm) and b.value == 1:
        return a
    if isinstance(a, IntImm) and a.value == 1:
        return b
    return a * b


class _Flattener(IRMutator):
    def __init__(self) -> None:
        self.flat: dict[Any, Buffer] = {}  # keyed by the data variable: one per memory

    def flat_buffer(self, buf: Buffer) -> Buffer:
        if len(buf.shape) == 1 and not buf.strides:
            return buf
        found = self.flat.get(buf.data)
        if found is None:
            found = Buffer(buf.name, (buffer_numel(buf),), buf.dtype, buf.scope, data=buf.data)
            self.flat[buf.data] = found
        return found

    def visit_BufferLoad(self, op: BufferLoad) -> PrimExpr:
        indices = tuple(self.visit(i) for i in op.indices)
        if len(op.buffer.shape) == 1 and not op.buffer.strides:
            if all(a is b for a, b in zip(indices, op.indices)):
                return op
            return BufferLoad(op.buffer, indices)
        return BufferLoad(self.flat_buffer(op.buffer), (flat_index(op.buffer, indices),))

    def visit_BufferStore(self, op: BufferStore) -> Stmt:
        value = self.visit(op.value)
        indices = tuple(self.visit(i) for i in op.indices)
        if len(op.buffer.shape) == 1 and not op.buffer.strides:
            return BufferStore(op.buffer, value, indices)
        return BufferStore(
            self.flat_buffer(op.buffer), value, (flat_index(op.buffer, indices),)
        )

    def visit_Allocate(self, op: Allocate) -> Stmt:
        return Allocate(self.flat_buffer(op.buffer), self.visit(op.body))
