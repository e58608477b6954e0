"""What the two rewrites of ``lower_cross_thread_reduction`` share: the reduction found
under a thread-bound reduce loop (:class:`Reduction`), its reducer read off the block
(:func:`reducer`), the identity a thread with no part holds, and small expression helpers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlc.errors import LoweringError
from mlc.tir.expr import (
    Add,
    BufferLoad,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Range,
    Var,
    const,
)
from mlc.tir.functor import uses_var
from mlc.tir.reduce_identity import reduction_identity
from mlc.tir.stmt import (
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    For,
    IfThenElse,
    Stmt,
)

REDUCERS: tuple[type, ...] = (Add, Mul, Max, Min)


def uses(e: Any, var: Var) -> bool:
    return uses_var(e, lambda v: v is var)


def uses_any(e: Any, loops: list[For]) -> bool:
    ids = {id(f.loop_var) for f in loops}
    return uses_var(e, lambda v: id(v) in ids)


def identity(op: type, dtype: str) -> PrimExpr:
    """The value that changes nothing, which a thread with no part (a tail, an inactive lane)
    holds: te's own reduction identity (-inf/+inf for a float max/min)."""
    return reduction_identity(op, dtype)


def point(buf: Buffer, idx: tuple[PrimExpr, ...]) -> BufferRegion:
    return BufferRegion(buf, tuple(Range(i, const(1, i.dtype)) for i in idx))


def is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and bool(e.value)


@dataclass(frozen=True)
class Reduction:
    """What the rewrites of one reduction share."""

    f: For                      # the reduce loop bound to a thread axis
    items: list[Stmt]           # f's body: the reduction last
    inner: list[For]            # reduce loops between f and the block
    br: BlockRealize
    store: BufferStore          # C[...] = C[...] op value
    cond: PrimExpr | None       # the `if` around the store, if any
    op: type
    value: PrimExpr
    others: list[For]           # threadIdx loops around f

    @property
    def block(self) -> Block:
        return self.br.block

    @property
    def dtype(self) -> str:
        return self.store.buffer.dtype


def reducer(b: Block, where: str) -> tuple[BufferStore, PrimExpr | None, type, PrimExpr]:
    body = b.body
    cond = None
    if isinstance(body, IfThenElse) and body.else_case is None:
        cond, body = body.condition, body.then_case
    if isinstance(body, BufferStore) and isinstance(body.value, REDUCERS):
        v = body.value
        for mine, other in ((v.a, v.b), (v.b, v.a)):  # type: ignore[attr-defined]
            if (
                isinstance(mine, BufferLoad)
                and mine.buffer is body.buffer
                and all(same(x, y) for x, y in zip(mine.indices, body.indices))
            ):
                return body, cond, type(v), other
    raise LoweringError(
        f"{where}, but it is not `C[...] = C[...] op value` with op one of +, *, max, min; "
        "only those can be combined across threads"
    )


def same(x: PrimExpr, y: PrimExpr) -> bool:
    from mlc.tir.arith.linear import expr_key

    return bool(expr_key([x]) == expr_key([y]))
