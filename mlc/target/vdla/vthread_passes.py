"""The VDLA virtual-thread pass: ``inject_virtual_threads`` turns a vthread/cthread loop into
one interleaved instruction stream, each thread with its own copy of the on-chip buffers."""

from __future__ import annotations

import dataclasses
from typing import Any

from mlc.target.vdla.affine import (
    UOP_LOOP,
    as_int,
    scope_of,
)
from mlc.tir.arith import simplify
from mlc.tir.expr import (
    BufferLoad,
    Call,
    PrimExpr,
    StringImm,
    Var,
    const,
)
from mlc.tir.functor import IRMutator, substitute, uses_var
from mlc.tir.stmt import (
    Allocate,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    PrimFunc,
    SeqStmt,
    Stmt,
)

# ---------------------------------------------------------------------------------------------
# inject_virtual_threads


def inject_virtual_threads(func: PrimFunc) -> PrimFunc:
    """A loop bound to ``vthread`` or ``cthread`` becomes one instruction stream in which the
    threads take turns, step by step (TVM's ``InjectVirtualThread``)::

        for t in vthread(2):                     AL = alloc(2 x the tile)   # a copy each
            AL = alloc(tile)                     for ko in range(n):
            for ko in range(n):          ->          dma_copy2d(AL[0], A[t=0, ko])
                dma_copy2d(AL, A[t, ko])             gemm(CL[0], AL[0], BL[0])
                gemm(CL, AL, BL)                     dma_copy2d(AL[1], A[t=1, ko])
                                                     gemm(CL[1], AL[1], BL[1])

    The loop is pushed inwards through loops and sequences that do not depend on it and unrolled at
    the innermost statements: a sequence of instructions (one step of a thread: its loads and
    the GEMM that uses them) or a single instruction; every on-chip buffer allocated inside it
    gets one copy per thread (stacked along its rows). Dependency tokens are inserted later,
    from what each instruction touches, so thread 0's next load waits only for thread 0's GEMM
    and runs while thread 1 computes."""
    return func.with_body(_VThreads().visit(func.body))


def _is_vthread(f: For) -> bool:
    tag = f.thread_binding or ""
    return f.kind is ForKind.THREAD_BINDING and (tag.startswith("vthread") or tag == "cthread")


class _VThreads(IRMutator):
    def visit_For(self, op: For) -> Any:
        if not _is_vthread(op):
            return self.generic_visit(op)
        body = self.visit(op.body)
        n = as_int(op.extent)
        var = op.loop_var
        allocs: list[Buffer] = []
        body = _Expand(var, n, allocs).visit(body)
        out = _interleave(body, var, n)
        for buf in reversed(allocs):
            out = Allocate(buf, out)
        return out


class _Expand(IRMutator):
    """Drop the on-chip allocations inside the thread loop, each replaced by one buffer with
    a copy per thread (thread ``t``'s rows start at ``t * rows``)."""

    def __init__(self, var: Var, n: int, allocs: list[Buffer]) -> None:
        self.var, self.n, self.allocs = var, n, allocs
        self.map: dict[int, tuple[Buffer, int]] = {}

    def visit_Allocate(self, op: Allocate) -> Any:
        if scope_of(op.buffer) is None:
            return self.generic_visit(op)
        rows = as_int(op.buffer.shape[0])
        new = dataclasses.replace(op.buffer, shape=(const(rows * self.n), *op.buffer.shape[1:]))
        self.map[id(op.buffer)] = (new, rows)
        self.allocs.append(new)
        return self.visit(op.body)

    def _idx(self, buf: Buffer, indices: tuple[PrimExpr, ...]
             ) -> tuple[Buffer, tuple[PrimExpr, ...]]:
        indices = tuple(self.visit(i) for i in indices)
        if id(buf) not in self.map:
            return buf, indices
        new, rows = self.map[id(buf)]
        return new, (simplify(self.var * rows + indices[0]), *indices[1:])

    def visit_BufferLoad(self, op: BufferLoad) -> Any:
        buf, idx = self._idx(op.buffer, op.indices)
        return BufferLoad(buf, idx)

    def visit_BufferStore(self, op: BufferStore) -> Any:
        buf, idx = self._idx(op.buffer, op.indices)
        return BufferStore(buf, self.visit(op.value), idx)


def _interleave(stmt: Stmt, var: Var, n: int) -> Stmt:
    def uses(node: Any) -> bool:
        return uses_var(node, lambda v: v is var)

    if not uses(stmt):
        return stmt
    if isinstance(stmt, For) and not dict(stmt.annotations).get(UOP_LOOP) \
            and not uses(stmt.min) and not uses(stmt.extent):
        return dataclasses.replace(stmt, body=_interleave(stmt.body, var, n))
    if isinstance(stmt, SeqStmt) and not all(_is_instruction(s) for s in stmt.seq):
        return SeqStmt(tuple(_interleave(s, var, n) for s in stmt.seq))
    if isinstance(stmt, IfThenElse) and not uses(stmt.condition):
        return dataclasses.replace(
            stmt, then_case=_interleave(stmt.then_case, var, n),
            else_case=None if stmt.else_case is None else _interleave(stmt.else_case, var, n))
    if isinstance(stmt, Allocate):
        return dataclasses.replace(stmt, body=_interleave(stmt.body, var, n))
    return SeqStmt(tuple(_TagThread(t).visit(substitute(stmt, {var: const(t, var.dtype)}))
                         for t in range(n)))


def _is_instruction(stmt: Stmt) -> bool:
    """One instruction: a call, or a GEMM with its micro-op loops."""
    return isinstance(stmt, Evaluate) or (
        isinstance(stmt, For) and bool(dict(stmt.annotations).get(UOP_LOOP)))


class _TagThread(IRMutator):
    """Append the thread's id to each instruction call (the printer's ``@TID``)."""

    def __init__(self, tid: int) -> None:
        self.tid = tid

    def visit_Call(self, op: Call) -> Any:
        new = self.generic_visit(op)
        if op.op.startswith("vdla."):
            return Call(op.dtype, op.op, (*new.args, StringImm(f"tid={self.tid}")))
        return new

    def visit_BufferLoad(self, op: BufferLoad) -> Any:
        return BufferLoad(op.buffer, tuple(simplify(i) for i in op.indices))
