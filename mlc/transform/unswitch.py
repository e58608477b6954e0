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

The guarded version is itself versioned down the guards, in order, so the last tile runs a
guard-free loop too: with guards ``g1 ... gn`` (the rows of the tile), version ``m`` runs
where ``g1 ... gm`` hold and ``g(m+1)`` does not; it drops the first ``m`` guards and the
statements under ``g(m+1)``::

    if g4 and g5:  for k: rows 0-5            (every full tile)
    elif g4:       for k: rows 0-4            (g5 fails: its statements are dropped)
    else:          for k: rows 0-3, and row 5 still under g5

Only innermost serial loops are versioned (no loop inside them), and only on the conditions
that read no memory, call nothing and use none of the variables the loop defines (other
``if``s stay in every version). At most ``MAX_VERSIONS`` loops: a tile with more distinct
guards gets the guard-free loop and the loop as it was. Runs after ``unroll_loops``, when
the unrolled rows of a register tile are separate statements, each with its own guard.
"""

from __future__ import annotations

from mlc.tir.arith import simplify as simplify_expr
from mlc.tir.expr import And, BufferLoad, Call, IntImm, PrimExpr, Var, const
from mlc.tir.functor import IRMutator, contains, post_order_visit
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
from mlc.transform.unroll import fresh_copy

MAX_VERSIONS = 8  # loops one innermost loop may become (each a copy of the unrolled tile)


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
        keys = [str(g) for g in distinct]

        def version(holds: int, fails: str | None) -> For:
            inner = _Specialize(guards, set(keys[:holds]), fails).visit(body)
            return For(op.loop_var, op.min, op.extent, op.kind, inner, op.thread_binding,
                       op.annotations)

        def all_of(conds: list[PrimExpr]) -> PrimExpr:
            out = conds[0]
            for g in conds[1:]:
                out = And(out, g)
            return out

        n = len(distinct)
        # the other versions get fresh variables: each variable is defined once
        if n + 1 > MAX_VERSIONS:
            return IfThenElse(all_of(distinct), version(n, None), fresh_copy(loop, {}))
        chain: Stmt = fresh_copy(version(0, keys[0]), {})
        for m in range(1, n + 1):
            loop_m = version(m, keys[m] if m < n else None)
            chain = IfThenElse(all_of(distinct[:m]), loop_m if m == n else
                               fresh_copy(loop_m, {}), chain)
        return chain


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
            if not isinstance(simplify_expr(cond), IntImm):  # `1 == 0` from an unrolled
                guards.append(cond)  # copy is for simplify to drop, not a loop to version

    post_order_visit(loop.body, visit)
    return guards


def _distinct(guards: list[PrimExpr]) -> list[PrimExpr]:
    """One of each condition (unrolled copies repeat them), in order."""
    out: dict[str, PrimExpr] = {}
    for g in guards:
        out.setdefault(str(g), g)
    return list(out.values())


class _Specialize(IRMutator):
    """The loop body where the guards whose text is in ``holds`` are true (their ``if``s
    dropped) and the one whose text is ``fails`` is false (its statements dropped)."""

    def __init__(self, guards: list[PrimExpr], holds: set[str], fails: str | None) -> None:
        self.ids = {id(g) for g in guards}
        self.holds, self.fails = holds, fails

    def visit_IfThenElse(self, op: IfThenElse) -> Stmt:
        if id(op.condition) in self.ids:
            key = str(op.condition)
            if key in self.holds:
                return self.visit(op.then_case)  # type: ignore[no-any-return]
            if key == self.fails:
                return _NOTHING
        return self.generic_visit(op)  # type: ignore[no-any-return]

    def visit_SeqStmt(self, op: SeqStmt) -> Stmt:
        kept = [s for s in (self.visit(x) for x in op.seq) if s is not _NOTHING]
        return seq(*kept) if kept else _NOTHING


_NOTHING: Stmt = Evaluate(const(0))
