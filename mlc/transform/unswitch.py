"""``unswitch_loops``: take the guards a loop does not change out of it.

A split that does not divide its loop leaves guards on the last tile; when they sit inside an
innermost loop that does not change them (the reduction loop of a micro-kernel), every
iteration tests them, and LLVM keeps the accumulators in memory. This pass makes two
versions of such a loop, chosen once, outside it::

    for k in range(256):                        if i0 * 6 + 5 < 1024:
        if i0 * 6 + 0 < 1024:                       for k in range(256):
            C[...] = C[...] + ...         ->            C[...] = C[...] + ...   (6 statements)
        ...                                     else:
        if i0 * 6 + 5 < 1024:                       for k in range(256):   (the loop as it was)
            C[...] = C[...] + ...

Only innermost serial loops are versioned (no loop inside them), and only on the conditions
that read no memory, call nothing and use none of the variables the loop defines (other
``if``s stay in both versions). Runs after ``unroll_loops``, when the unrolled rows of a
register tile are separate statements, each with its own guard.
"""

from __future__ import annotations

from mlc.tir.expr import And, BufferLoad, Call, PrimExpr, Var
from mlc.tir.functor import IRMutator, contains, post_order_visit
from mlc.tir.stmt import Allocate, For, ForKind, IfThenElse, LetStmt, PrimFunc, Stmt
from mlc.transform.unroll import fresh_copy


def unswitch_loops(func: PrimFunc) -> PrimFunc:
    """Version every innermost serial loop on the invariant guards inside it (see above)."""
    return func.with_body(_Unswitcher().visit(func.body))


class _Unswitcher(IRMutator):
    def visit_For(self, op: For) -> Stmt:
        body = self.visit(op.body)
        loop = op if body is op.body else For(op.loop_var, op.min, op.extent, op.kind, body,
                                              op.thread_binding, op.annotations)
        if op.kind is not ForKind.SERIAL or contains(body, lambda n: isinstance(n, For)):
            return loop
        guards = _invariant_guards(loop)
        if not guards:
            return loop
        distinct = _distinct(guards)
        condition: PrimExpr = distinct[0]
        for g in distinct[1:]:
            condition = And(condition, g)
        fast = _DropGuards(guards).visit(body)
        fast_loop = For(op.loop_var, op.min, op.extent, op.kind, fast, op.thread_binding,
                        op.annotations)
        # the guarded version gets fresh variables: each variable is defined once
        return IfThenElse(condition, fast_loop, fresh_copy(loop, {}))


def _defined_inside(body: Stmt) -> set[Var]:
    found: set[Var] = set()

    def visit(n: object) -> None:
        if isinstance(n, For):
            found.add(n.loop_var)
        elif isinstance(n, LetStmt):
            found.add(n.var)
        elif isinstance(n, Allocate):
            found.add(n.buffer.data)

    post_order_visit(body, visit)
    return found


def _invariant_guards(loop: For) -> list[PrimExpr]:
    """The conditions of the else-less ``if``s in ``loop`` that do not change inside it
    (pure: no memory read, no call, no variable the loop defines). The other ``if``s stay
    where they are in both versions."""
    inside = _defined_inside(loop.body) | {loop.loop_var}
    guards: list[PrimExpr] = []

    def visit(n: object) -> None:
        if not isinstance(n, IfThenElse) or n.else_case is not None:
            return
        cond = n.condition
        if not contains(cond, lambda x: isinstance(x, (BufferLoad, Call))
                        or (isinstance(x, Var) and x in inside)):
            guards.append(cond)

    post_order_visit(loop.body, visit)
    return guards


def _distinct(guards: list[PrimExpr]) -> list[PrimExpr]:
    """One of each condition (unrolled copies repeat them), in order."""
    out: dict[str, PrimExpr] = {}
    for g in guards:
        out.setdefault(str(g), g)
    return list(out.values())


class _DropGuards(IRMutator):
    def __init__(self, guards: list[PrimExpr]) -> None:
        self.guards = guards

    def visit_IfThenElse(self, op: IfThenElse) -> Stmt:
        if any(op.condition is g for g in self.guards):
            return self.visit(op.then_case)  # type: ignore[no-any-return]
        return self.generic_visit(op)  # type: ignore[no-any-return]
