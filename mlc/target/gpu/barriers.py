"""Barriers (``__syncthreads()``) in a kernel's per-thread program: the barrier statement,
:func:`thread_sync`, which puts one between a statement that writes a shared buffer and a later
one that reads or writes it (and at the end of a loop body that does both), and the pass
:func:`insert_thread_sync` that runs it on every kernel.
"""

from __future__ import annotations

from dataclasses import replace

from mlc.tir.expr import (
    BufferLoad,
    Call,
    StringImm,
    Var,
    as_int,
)
from mlc.tir.functor import (
    IRMutator,
    IRVisitor,
    post_order_visit,
)
from mlc.tir.stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)
from mlc.tir.thread_tag import THREAD_AXES


def barrier() -> Stmt:
    """The statement ``__syncthreads()``: every thread of the block waits here."""
    return Evaluate(Call("int32", "tvm_storage_sync", (StringImm("shared"),)))


def is_barrier(s: Stmt) -> bool:
    return (
        isinstance(s, Evaluate)
        and isinstance(s.value, Call)
        and s.value.op in ("tvm_storage_sync", "syncthreads")
    )


def insert_thread_sync(func: PrimFunc) -> PrimFunc:
    """The pass that puts ``__syncthreads()`` into every kernel's per-thread program
    (:func:`thread_sync`)."""

    class _Sync(IRMutator):
        def visit_KernelLaunch(self, k: KernelLaunch) -> Stmt:
            return replace(k, body=thread_sync(k.body, k.index_vars))

    return func.with_body(_Sync().visit(func.body))


class _Access(IRVisitor):
    """The shared buffers (by data var) a statement reads and writes."""

    def __init__(self, shared: set[int]) -> None:
        self.shared = shared
        self.reads: set[int] = set()
        self.writes: set[int] = set()

    def visit_BufferLoad(self, op: BufferLoad) -> None:
        if id(op.buffer.data) in self.shared:
            self.reads.add(id(op.buffer.data))
        self.generic_visit(op)

    def visit_BufferStore(self, op: BufferStore) -> None:
        if id(op.buffer.data) in self.shared:
            self.writes.add(id(op.buffer.data))
        self.generic_visit(op)


def thread_dependent(e: object, varying: set[int]) -> bool:
    """Does ``e`` read a thread index (a var in ``varying``) or memory?"""
    found = False

    def check(n: object) -> None:
        nonlocal found
        if (isinstance(n, Var) and id(n) in varying) or isinstance(n, BufferLoad):
            found = True

    post_order_visit(e, check)
    return found


def thread_sync(body: Stmt, index_vars: dict[str, Var]) -> Stmt:
    """Insert barriers into a per-thread program (see the module docstring)."""
    shared: set[int] = set()

    def find_shared(n: object) -> None:
        if isinstance(n, (BufferLoad, BufferStore)) and n.buffer.scope == "shared":
            shared.add(id(n.buffer.data))

    post_order_visit(body, find_shared)
    if not shared:
        return body
    varying = {id(v) for t, v in index_vars.items() if t in THREAD_AXES}

    def access(s: Stmt) -> tuple[set[int], set[int]]:
        a = _Access(shared)
        a.visit(s)
        return a.reads, a.writes

    def sync_seq(children: tuple[Stmt, ...], pending_r: set[int]) -> Stmt:
        """Statements run one after another, after reads of the shared buffers
        ``pending_r`` that no barrier has yet separated from them."""
        out: list[Stmt] = []
        pending_w: set[int] = set()
        for child in children:
            r, w = access(child)
            if (r & pending_w) or (w & pending_r) or (w & pending_w):
                out.append(barrier())
                pending_r, pending_w = set(), set()
            synced = sync(child)
            out.append(synced)
            if _always_ends_with_barrier(synced):
                pending_r, pending_w = set(), set()
            else:
                pending_r = pending_r | r
                pending_w = pending_w | w
        return seq(*out)

    def sync(s: Stmt) -> Stmt:
        """``s`` runs uniformly (every thread reaches it): barriers may go inside."""
        if isinstance(s, SeqStmt):
            return sync_seq(s.seq, set())
        if isinstance(s, For):
            if thread_dependent(s.min, varying) or thread_dependent(s.extent, varying):
                varying.add(id(s.loop_var))
                return s
            body = sync(s.body)
            r, w = access(s.body)
            if w & r and not _ends_with_barrier(body):
                body = seq(body, barrier())
            return For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_binding,
                       s.annotations)
        if isinstance(s, LetStmt):
            if thread_dependent(s.value, varying):
                varying.add(id(s.var))
            # ``v = S[31 - tx]`` reads S before the body runs: a write of S in the body
            # needs a barrier after the read (other threads may not have read yet)
            value_reads, _ = access(Evaluate(s.value))
            inner = s.body.seq if isinstance(s.body, SeqStmt) else (s.body,)
            return LetStmt(s.var, s.value, sync_seq(inner, value_reads))
        if isinstance(s, IfThenElse):
            if thread_dependent(s.condition, varying):
                return s  # divergent: no barrier may go inside
            other = sync(s.else_case) if s.else_case is not None else None
            return IfThenElse(s.condition, sync(s.then_case), other)
        if isinstance(s, Allocate):
            return Allocate(s.buffer, sync(s.body))
        return s

    return sync(body)


def _ends_with_barrier(s: Stmt) -> bool:
    last = s.seq[-1] if isinstance(s, SeqStmt) else s
    return is_barrier(last)


def _always_ends_with_barrier(s: Stmt) -> bool:
    """Has every thread just passed a barrier after ``s`` (a loop that runs at least once
    and ends with one counts)?"""
    if isinstance(s, For):
        extent = as_int(s.extent)
        return extent is not None and extent > 0 and _always_ends_with_barrier(s.body)
    if isinstance(s, SeqStmt):
        return _always_ends_with_barrier(s.seq[-1])
    if isinstance(s, (LetStmt, Allocate)):
        return _always_ends_with_barrier(s.body)
    return is_barrier(s)
