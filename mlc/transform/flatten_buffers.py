"""``flatten_buffers``: give every buffer one dimension, as memory has.

A buffer of shape ``(n, m)`` stored row-major holds ``A[i, j]`` at offset ``i * m + j``;
with explicit strides (``storage_align``) the offset is ``i * strides[0] + j * strides[1]``::

    A = Buffer("A", (n, 64))                 A_flat = Buffer("A", (n * 64,), data=A.data)
    B[i, j] = A[i, j] * 2.0         ->       B_flat[i * 64 + j] = A_flat[i * 64 + j] * 2.0

The flat buffer shares the original's ``data`` variable (codegen identifies memory by it),
and there is one flat buffer per original buffer. The function's ``params`` keep their
multi-dimensional shapes: that is how the runtime checks the arrays it is given.

A flat index hides a wrong index in an inner dimension: ``X[1, G[i]]`` of a 3 x 3 ``X`` with
``G[i] == -1`` is ``X_flat[2]``, inside the array, so a check of the flat index would pass
it. So each index of a multi-dimensional buffer is checked here against its own dimension:
one that is read from data, or that the loops and conditions around it do not prove in range
where ``check_bounds`` could not (a symbolic size, a condition), is wrapped in
``check_index(index, extent, "X[1, G[i]] ...")``, which the code generator checks when the
function runs (``IndexOutOfBoundsError``)::

    B[i] = X[1, G[i]]               ->       B[i] = X_flat[3 + check_index(G[i], 3, "...")]

With every dimension in range, the flat index is in range by construction, so the code
generator does not check the flat index of a flattened parameter again
(:func:`checked_by_dimension`): ``A[i, k]`` of an ``(n, n)`` array under ``if i < n and
k < n`` costs no check at all, where ``i * n + k < n * n`` is beyond the analyzer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mlc.errors import LoweringError
from mlc.tir import dtype as dt
from mlc.tir.arith import Analyzer
from mlc.tir.expr import (
    LT,
    Add,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    PrimExpr,
    Range,
    Select,
    StringImm,
    Sub,
    Var,
    conjuncts,
    const,
    convert,
)
from mlc.tir.functor import IRMutator, contains
from mlc.tir.stmt import Allocate, Buffer, BufferStore, For, IfThenElse, PrimFunc, Stmt


def checked_by_dimension(func: PrimFunc) -> dict[int, Buffer]:
    """The flat buffers :func:`flatten_buffers` makes for ``func``'s multi-dimensional
    parameters, by ``id(data)``: every access to one of them has each dimension's index
    proven or checked, so its flat index needs no run-time check of its own."""
    return {id(p.data): Buffer(p.name, (buffer_numel(p),), p.dtype, p.scope, data=p.data)
            for p in func.params if len(p.shape) > 1 and not p.strides}


def flatten_buffers(func: PrimFunc) -> PrimFunc:
    """Rewrite every load, store and allocation of ``func`` to use 1-D buffers."""
    free = {id(v) for v in func.size_vars} | {id(v) for _, v in func.scalars}
    return func.with_body(_Flattener(free).visit(func.body))


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


_WIDENED = (Add, Sub, Mul, FloorDiv, FloorMod, Div, Mod, Min, Max)


def _int64(e: PrimExpr) -> PrimExpr:
    """``e`` computed in int64: the cast goes down to the leaves, so ``(i + m) * 2**30``
    becomes ``(int64(i) + int64(m)) * 2**30`` rather than ``int64((i + m) * 2**30)``, which
    would wrap around in 32 bits before the cast."""
    if e.dtype == "int64":
        return e
    if isinstance(e, IntImm):
        return IntImm(e.value, "int64")
    if isinstance(e, _WIDENED) and dt.is_int(e.dtype) and dt.lanes(e.dtype) == 1:
        return type(e)(_int64(e.a), _int64(e.b), "int64")
    if isinstance(e, Select) and dt.is_int(e.dtype) and dt.lanes(e.dtype) == 1:
        return Select(e.condition, _int64(e.true_value), _int64(e.false_value), "int64")
    return Cast("int64", e)


def _data_dependent(index: PrimExpr) -> bool:
    return contains(index, lambda n: isinstance(n, BufferLoad))


def flat_index(
    buf: Buffer, indices: tuple[PrimExpr, ...], wide: bool | None = None
) -> PrimExpr:
    """``sum(index_d * stride_d)`` for the buffer's strides, computed in int64 when an offset
    could exceed int32 (:func:`needs_int64`), so ``A[n // 2, 3]`` of a 70000 x 70000 array
    reads element 2450000003, not a wrapped-around one."""
    if not indices:
        return const(0)
    wide = needs_int64(buf) or bool(wide)
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
        value = a.value * b.value
        if not -(2**63) <= value < 2**63:
            raise LoweringError(
                f"a buffer of {value} elements (a size or stride {a.value} x {b.value}) is "
                "past what a 64-bit index can address: use smaller shapes")
        wide = a.dtype == "int64" or b.dtype == "int64" or not -(2**31) <= value < 2**31
        return const(value, "int64" if wide else a.dtype)  # 100000 x 100000 wrapped in int32
    if isinstance(b, IntImm) and b.value == 1:
        return a
    if isinstance(a, IntImm) and a.value == 1:
        return b
    return a * b


class _Flattener(IRMutator):
    def __init__(self, free: set[int]) -> None:
        self.free = free  # the function's sizes and scalar parameters: any value at the call
        self.flat: dict[Any, Buffer] = {}  # keyed by the data variable: one per memory
        self.analyzer = Analyzer()  # the enclosing loops' ranges, for checked_indices
        self.conditions: list[PrimExpr] = []  # the enclosing ifs' and selects' conditions

    # -- what is known around an access ---------------------------------------------------
    def visit_For(self, op: For) -> Stmt:
        self.analyzer.bind(op.loop_var, Range(convert(op.min), convert(op.extent)))
        return super().generic_visit(op)

    @contextmanager
    def _under(self, cond: PrimExpr) -> Iterator[None]:
        self.conditions.append(cond)
        try:
            with self.analyzer.constraint_scope(cond):
                yield
        finally:
            self.conditions.pop()

    def visit_IfThenElse(self, op: IfThenElse) -> Stmt:
        cond = self.visit(op.condition)
        with self._under(cond):
            then = self.visit(op.then_case)
        otherwise = None
        if op.else_case is not None:
            with self._under(Not(cond)):
                otherwise = self.visit(op.else_case)
        if cond is op.condition and then is op.then_case and otherwise is op.else_case:
            return op
        return IfThenElse(cond, then, otherwise)

    def visit_Select(self, op: Select) -> PrimExpr:
        cond = self.visit(op.condition)
        with self._under(cond):
            t = self.visit(op.true_value)
        with self._under(Not(cond)):
            f = self.visit(op.false_value)
        if cond is op.condition and t is op.true_value and f is op.false_value:
            return op
        return Select(cond, t, f, op.dtype)

    def checked_indices(
        self, buf: Buffer, indices: tuple[PrimExpr, ...], wide: bool
    ) -> tuple[PrimExpr, ...]:
        """``indices`` with each one that may leave its dimension wrapped in ``check_index``
        (see the module docstring), all in int64 when ``wide``: the flat index is then in
        range by construction."""
        out = [_int64(i) if wide else i for i in indices]
        for d in range(len(indices)):
            idx, extent = indices[d], convert(buf.shape[d])
            data_dependent = _data_dependent(idx)
            if not data_dependent:
                if (isinstance(extent, IntImm) and not self.conditions
                        and not self._over_symbolic_loop(idx)
                        and not contains(idx, lambda n: id(n) in self.free)):  # fmt: skip
                    continue  # check_bounds proved it before lowering (A[i + k] it cannot)
                if self._proved_inside(idx, extent):
                    continue
            shown = ", ".join(str(i) for i in indices)
            shape = ", ".join(str(s) for s in buf.shape)
            text = f"{buf.name}[{shown}] in dimension {d} of {buf.name} with shape ({shape})"
            out[d] = Call(out[d].dtype, "check_index", (out[d], extent, StringImm(text)))
        return tuple(out)

    def _over_symbolic_loop(self, idx: PrimExpr) -> bool:
        """Does ``idx`` use a loop variable of symbolic range, which check_bounds could not
        bound before lowering?"""

        def symbolic(n: Any) -> bool:
            dom = self.analyzer.range_of(n) if isinstance(n, Var) else None
            return dom is not None and not (
                isinstance(dom.min, IntImm) and isinstance(dom.extent, IntImm))

        return contains(idx, symbolic)

    def _proved_inside(self, idx: PrimExpr, extent: PrimExpr) -> bool:
        ana = self.analyzer
        if not ana.can_prove(idx >= 0):
            return False
        if ana.can_prove(idx < extent):
            return True
        dom = ana.range_of(idx) if isinstance(idx, Var) else None
        if dom is not None and ana.can_prove(dom.min + dom.extent <= extent):
            return True  # ``for j in range(m)`` indexing a dimension of size m
        # a guard ``idx < e`` (a split that does not divide) with ``e <= extent``
        for cond in self.conditions:
            for part in conjuncts(cond):
                if (isinstance(part, LT) and ana.can_prove(idx <= part.a)
                        and ana.can_prove(part.b <= extent)):  # fmt: skip
                    return True
        return False

    def flat_buffer(self, buf: Buffer) -> Buffer:
        if len(buf.shape) == 1 and not buf.strides:
            return buf
        found = self.flat.get(buf.data)
        if found is None:
            found = Buffer(buf.name, (buffer_numel(buf),), buf.dtype, buf.scope, data=buf.data)
            self.flat[buf.data] = found
        return found

    def indices(self, buf: Buffer, given: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        """The visited indices, inner ones checked (:meth:`checked_indices`), in int64 where
        an offset into ``buf`` may exceed int32 (:func:`needs_int64`)."""
        indices = tuple(convert(self.visit(i)) for i in given)
        # an index read from data may be anything: in int32, G[i] * 3 could wrap around
        # into the array and pass the check; in int64 it cannot
        wide = needs_int64(buf) or any(_data_dependent(i) for i in indices)
        if len(buf.shape) == 1 and not buf.strides:
            return tuple(_int64(i) for i in indices) if wide else indices
        return self.checked_indices(buf, indices, wide)

    def visit_BufferLoad(self, op: BufferLoad) -> PrimExpr:
        indices = self.indices(op.buffer, op.indices)
        if len(op.buffer.shape) == 1 and not op.buffer.strides:
            if all(a is b for a, b in zip(indices, op.indices)):
                return op
            return BufferLoad(op.buffer, indices)
        flat = flat_index(op.buffer, indices, wide=bool(indices) and indices[0].dtype == "int64")
        return BufferLoad(self.flat_buffer(op.buffer), (flat,))

    def visit_BufferStore(self, op: BufferStore) -> Stmt:
        value = self.visit(op.value)
        indices = self.indices(op.buffer, op.indices)
        if len(op.buffer.shape) == 1 and not op.buffer.strides:
            return BufferStore(op.buffer, value, indices)
        flat = flat_index(op.buffer, indices, wide=bool(indices) and indices[0].dtype == "int64")
        return BufferStore(self.flat_buffer(op.buffer), value, (flat,))

    def visit_Allocate(self, op: Allocate) -> Stmt:
        return Allocate(self.flat_buffer(op.buffer), self.visit(op.body))


class _Unwiden(IRMutator):
    def visit_Call(self, op: Call) -> PrimExpr:
        if op.op == "check_index" and op.args:  # the index it checks
            return self.visit(op.args[0])  # type: ignore[no-any-return]
        return self.generic_visit(op)  # type: ignore[no-any-return]

    def visit_Cast(self, op: Cast) -> PrimExpr:
        value = self.visit(op.value)
        if op.dtype == "int64" and dt.is_int(value.dtype):
            return value  # type: ignore[no-any-return]
        return Cast(op.dtype, value)

    def visit_IntImm(self, op: IntImm) -> PrimExpr:
        if op.dtype == "int64" and -(2**31) <= op.value < 2**31:
            return IntImm(op.value, "int32")
        return op


def without_index_widening(index: PrimExpr) -> PrimExpr:
    """``index`` as the student wrote it, undoing what this pass adds: the int64 casts on
    offsets that may exceed int32 (``A[int64(i) * int64(4096)]`` reads ``i * 4096``) and the
    ``check_index`` around indices. For messages and for comparing an offset with the int32
    guards around it; binary nodes keep their old dtypes (rebuild them where that matters)."""
    return _Unwiden().visit(index)  # type: ignore[no-any-return]
