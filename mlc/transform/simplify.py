"""``simplify``: tidy every expression using what the loops around it guarantee.

Inside ``for i in range(0, 32)`` the simplifier knows ``0 <= i < 32``, so the index
arithmetic that split/fuse/flatten leave behind folds back into readable code and guards
that always hold disappear::

    for i_0 in range(32):                      for i_0 in range(32):
        for i_1 in range(32):                      for i_1 in range(32):
            if i_0 * 32 + i_1 < 1024:      ->          B[i_0 * 32 + i_1] = A[i_0 * 32 + i_1]
                B[(i_0*32 + i_1) // 32 * 32 + (i_0*32 + i_1) % 32] = ...

Statements are cleaned up too: an ``if`` whose condition is provably true keeps only its
``then`` branch (provably false: its ``else``, or nothing), a loop of extent 1 becomes its body
with the loop variable replaced by its start, a loop of extent <= 0 disappears, a ``LetStmt``
binding a constant or a variable is substituted, and statements that do nothing are dropped.
"""

from __future__ import annotations

from typing import Any

from mlc.tir import dtype as dt
from mlc.tir.expr import BufferLoad, IntImm, PrimExpr, Range, Var, const
from mlc.tir.functor import IRMutator, substitute
from mlc.tir.stmt import (
    Allocate,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)
from mlc.transform._arith import Scope, is_const


def simplify(func: PrimFunc) -> PrimFunc:
    """Simplify every expression of ``func`` and drop the statements that become trivial."""
    return func.with_body(StmtSimplifier(Scope()).visit(func.body))


def no_op() -> Stmt:
    """The statement that does nothing (``Evaluate(0)``)."""
    return Evaluate(const(0))


def is_no_op(s: Stmt | None) -> bool:
    """True for a statement that has no effect."""
    if s is None:
        return True
    if isinstance(s, Evaluate):
        return is_const(s.value)
    if isinstance(s, SeqStmt):
        return all(is_no_op(x) for x in s.seq)
    return False


class StmtSimplifier(IRMutator):
    """Simplifies statements; every expression goes through the scope's analyzer."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    # -- expressions ---------------------------------------------------------------------
    def visit(self, node: Any) -> Any:
        if isinstance(node, PrimExpr):
            return self.simplify_expr(node)
        return super().visit(node)

    def simplify_expr(self, e: PrimExpr) -> PrimExpr:
        return _ExprSimplifier(self.scope).visit(e)

    # -- statements ----------------------------------------------------------------------
    def visit_For(self, op: For) -> Stmt:
        lo = self.simplify_expr(op.min)
        extent = self.simplify_expr(op.extent)
        if isinstance(extent, IntImm) and extent.value <= 0:
            return no_op()
        launch = op.kind is ForKind.THREAD_BINDING  # a GPU axis stays, even of extent 1
        if isinstance(extent, IntImm) and extent.value == 1 and not launch:
            return self.visit(substitute(op.body, {op.loop_var: lo}))
        token = self.scope.bind(op.loop_var, Range(lo, extent))
        try:
            body = self.visit(op.body)
        finally:
            self.scope.unbind(op.loop_var, token)
        if is_no_op(body):
            return no_op()
        if lo is op.min and extent is op.extent and body is op.body:
            return op
        return For(op.loop_var, lo, extent, op.kind, body, op.thread_binding, op.annotations)

    def visit_IfThenElse(self, op: IfThenElse) -> Stmt:
        cond = self.simplify_expr(op.condition)
        if self.scope.can_prove(cond):
            return self.visit(op.then_case)
        if self.scope.can_disprove(cond):
            return no_op() if op.else_case is None else self.visit(op.else_case)
        then_case = self.visit(op.then_case)
        else_case = None if op.else_case is None else self.visit(op.else_case)
        if is_no_op(else_case):
            else_case = None
        if else_case is None and is_no_op(then_case):
            return no_op()
        if cond is op.condition and then_case is op.then_case and else_case is op.else_case:
            return op
        return IfThenElse(cond, then_case, else_case)

    def visit_LetStmt(self, op: LetStmt) -> Stmt:
        value = self.simplify_expr(op.value)
        if is_const(value) or isinstance(value, Var):
            return self.visit(substitute(op.body, {op.var: value}))
        body = self.visit(op.body)
        if value is op.value and body is op.body:
            return op
        return LetStmt(op.var, value, body)

    def visit_SeqStmt(self, op: SeqStmt) -> Stmt:
        parts = [self.visit(s) for s in op.seq]
        kept = [s for s in parts if not is_no_op(s)]
        if not kept:
            return no_op()
        if len(kept) == len(op.seq) and all(a is b for a, b in zip(kept, op.seq)):
            return op
        return seq(*kept)

    def visit_Allocate(self, op: Allocate) -> Stmt:
        body = self.visit(op.body)
        if is_no_op(body):
            return no_op()
        return op if body is op.body else Allocate(op.buffer, body)


class _ExprSimplifier(IRMutator):
    """Sends integer and boolean scalar expressions to the analyzer; walks through float
    arithmetic (which is left as written) to reach the indices of its loads."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.inside = False  # inside an integer expression that will be simplified whole

    def visit(self, node: Any) -> Any:
        if isinstance(node, BufferLoad):
            indices = tuple(self._whole(i) for i in node.indices)
            if all(a is b for a, b in zip(indices, node.indices)):
                return node
            return BufferLoad(node.buffer, indices, node.dtype)
        if (
            not self.inside
            and isinstance(node, PrimExpr)
            and dt.lanes(node.dtype) == 1
            and (dt.is_int(node.dtype) or dt.is_bool(node.dtype))
        ):
            self.inside = True
            try:
                inner = super().visit(node)  # loads nested in it get their indices simplified
            finally:
                self.inside = False
            return self.scope.simplify(inner)
        return super().visit(node)

    def _whole(self, e: PrimExpr) -> PrimExpr:
        saved, self.inside = self.inside, False
        try:
            return self.visit(e)  # type: ignore[no-any-return]
        finally:
            self.inside = saved
