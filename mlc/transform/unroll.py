"""``unroll_loops``: expand each ``unroll`` loop into copies of its body.

    for k in unroll(range(3)):              C[i] = C[i] + A[i, 0]
        C[i] = C[i] + A[i, k]        ->     C[i] = C[i] + A[i, 1]
                                            C[i] = C[i] + A[i, 2]

Each copy has the loop variable replaced by its value (the next ``simplify`` folds the
arithmetic). Loops and allocations inside a copy get fresh variables, so every variable
is still defined once. A loop with a symbolic extent, or more than ``MAX_UNROLL``
iterations, stays a ``serial`` loop (LLVM may still unroll it).
"""

from __future__ import annotations

from typing import Any

from mlc.tir.expr import BufferLoad, PrimExpr, Var, as_int, const
from mlc.tir.functor import IRMutator
from mlc.tir.stmt import Allocate, Buffer, BufferStore, For, ForKind, LetStmt, PrimFunc, Stmt, seq
from mlc.transform.simplify import no_op

MAX_UNROLL = 64
"""The largest extent that ``unroll_loops`` expands."""


def unroll_loops(func: PrimFunc) -> PrimFunc:
    """Expand every ``unroll`` loop of constant extent <= ``MAX_UNROLL`` (see above)."""
    return func.with_body(_Unroller().visit(func.body))


class _Unroller(IRMutator):
    def visit_For(self, op: For) -> Stmt:
        body = self.visit(op.body)
        if op.kind is not ForKind.UNROLLED:
            if body is op.body:
                return op
            return For(op.loop_var, op.min, op.extent, op.kind, body, op.thread_binding,
                       op.annotations)
        n = as_int(op.extent)
        if n is None or n > MAX_UNROLL:
            return For(op.loop_var, op.min, op.extent, ForKind.SERIAL, body, None, op.annotations)
        lo = as_int(op.min)  # a constant start: each copy gets its own constant (k, not 0 + k),
        # so the guards it decides fold before unswitch_loops sees them as loop-invariant
        copies = [fresh_copy(body, {op.loop_var: op.min + k if lo is None
                                    else const(lo + k, op.loop_var.dtype)}) for k in range(n)]
        return seq(*copies) if copies else no_op()


def fresh_copy(stmt: Stmt, mapping: dict[Var, PrimExpr]) -> Stmt:
    """``stmt`` with ``mapping`` substituted and every variable or buffer it defines (loop
    variables, let variables, allocations) replaced by a new one of the same name."""
    return _Renamer(dict(mapping)).visit(stmt)  # type: ignore[no-any-return]


class _Renamer(IRMutator):
    def __init__(self, mapping: dict[Var, PrimExpr]) -> None:
        self.mapping: dict[Var, Any] = mapping
        self.buffers: dict[Var, Buffer] = {}  # old data var -> new buffer

    def visit_Var(self, v: Var) -> Any:
        return self.mapping.get(v, v)

    def _fresh(self, v: Var) -> Var:
        new = Var(v.name, v.dtype)
        self.mapping[v] = new
        return new

    def visit_For(self, op: For) -> Stmt:
        lo, extent = self.visit(op.min), self.visit(op.extent)
        var = self._fresh(op.loop_var)
        return For(var, lo, extent, op.kind, self.visit(op.body), op.thread_binding,
                   op.annotations)

    def visit_LetStmt(self, op: LetStmt) -> Stmt:
        value = self.visit(op.value)
        var = self._fresh(op.var)
        return LetStmt(var, value, self.visit(op.body))

    def visit_Allocate(self, op: Allocate) -> Stmt:
        old = op.buffer
        shape = tuple(self.visit(d) for d in old.shape)
        strides = tuple(self.visit(d) for d in old.strides)
        data = Var(old.data.name, old.data.dtype)
        new = Buffer(old.name, shape, old.dtype, old.scope, strides, data)
        self.buffers[old.data] = new
        return Allocate(new, self.visit(op.body))

    def visit_BufferLoad(self, op: BufferLoad) -> PrimExpr:
        indices = tuple(self.visit(i) for i in op.indices)
        return BufferLoad(self.buffers.get(op.buffer.data, op.buffer), indices, op.dtype)

    def visit_BufferStore(self, op: BufferStore) -> Stmt:
        indices = tuple(self.visit(i) for i in op.indices)
        buf = self.buffers.get(op.buffer.data, op.buffer)
        return BufferStore(buf, self.visit(op.value), indices)
