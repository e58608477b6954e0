"""Shared helpers of the lowering tests: IR comparison, the contract check, the oracle."""

from __future__ import annotations

from typing import Any

import numpy as np

from mlc.testing.interpreter import eval_prim_func as run_reference
from mlc.tir import assert_structural_equal
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    BufferLoad,
    IterKind,
    IterVar,
    PrimExpr,
    Range,
    Var,
    const,
)
from mlc.tir.functor import post_order_visit
from mlc.tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)


def assert_ir_equal(actual: Any, expected: Any) -> None:
    """Structural equality (free variables matched by position).

    Flat buffers are new Buffer objects that share the original's data variable, so they
    are matched like free variables (by position); tests check the data variables apart."""
    assert_structural_equal(actual, expected, map_free_vars=True)


def eval_prim_func(func: PrimFunc, *arrays: np.ndarray) -> None:
    run_reference(func, *arrays)


_ALLOWED = (For, IfThenElse, LetStmt, SeqStmt, BufferStore, Evaluate, Allocate)


def check_lowered(func: PrimFunc) -> None:
    """The contract of mlc.lower's output (see mlc/transform/__init__.py)."""
    params = {id(b.data) for b in func.params}
    allocated: set[int] = set()
    free_ints: set[Var] = set()
    bound: set[int] = set()

    def visit(n: Any) -> None:
        if isinstance(n, Stmt):
            assert isinstance(n, _ALLOWED), f"{type(n).__name__} left after lowering"
        if isinstance(n, For):
            assert n.kind in (ForKind.SERIAL, ForKind.PARALLEL, ForKind.THREAD_BINDING), n.kind
            bound.add(id(n.loop_var))
        if isinstance(n, LetStmt):
            bound.add(id(n.var))
        if isinstance(n, Allocate):
            assert len(n.buffer.shape) == 1
            allocated.add(id(n.buffer.data))
        if isinstance(n, (BufferLoad, BufferStore)):
            assert len(n.buffer.shape) == 1 and not n.buffer.strides, n.buffer
            assert len(n.indices) == 1
        if isinstance(n, IfThenElse):
            assert dt.lanes(n.condition.dtype) == 1
        if isinstance(n, Var) and dt.is_int(n.dtype):
            free_ints.add(n)

    post_order_visit(func.body, visit)

    def data_of(n: Any) -> None:
        if isinstance(n, (BufferLoad, BufferStore)):
            assert id(n.buffer.data) in params | allocated, f"unknown memory {n.buffer.name}"

    post_order_visit(func.body, data_of)
    sizes = {id(v) for v in func.size_vars}
    leftover = [v.name for v in free_ints if id(v) not in bound | sizes]
    assert not leftover, f"free variables left: {leftover}"


# -- building block-level programs by hand ----------------------------------------------------


def spatial(var: Var, extent: Any) -> IterVar:
    return IterVar(var, Range(const(0), _e(extent)), IterKind.SPATIAL)


def reduce(var: Var, extent: Any) -> IterVar:
    return IterVar(var, Range(const(0), _e(extent)), IterKind.REDUCE)


def _e(x: Any) -> PrimExpr:
    return x if isinstance(x, PrimExpr) else const(x)


def full_region(buf: Buffer) -> BufferRegion:
    return BufferRegion(buf, tuple(Range(const(0), d) for d in buf.shape))


def loop(var: Var, extent: Any, body: Stmt, kind: ForKind = ForKind.SERIAL) -> For:
    return For(var, const(0), _e(extent), kind, body)


def block_realize(
    name: str,
    iter_vars: tuple[IterVar, ...],
    values: tuple[PrimExpr, ...],
    body: Stmt,
    *,
    reads: tuple[Buffer, ...] = (),
    writes: tuple[Buffer, ...] = (),
    init: Stmt | None = None,
    predicate: Any = True,
    alloc: tuple[Buffer, ...] = (),
) -> BlockRealize:
    block = Block(
        name, iter_vars, tuple(full_region(b) for b in reads),
        tuple(full_region(b) for b in writes), body, init, alloc,
    )
    return BlockRealize(values, const(predicate) if isinstance(predicate, bool) else predicate,
                        block)


def root(body: Stmt, alloc: tuple[Buffer, ...] = ()) -> BlockRealize:
    return BlockRealize((), const(True), Block("root", (), (), (), body, None, alloc))


def buffer(name: str, shape: tuple[Any, ...], dtype: str = "float32", **kw: Any) -> Buffer:
    """A Buffer whose shape entries are expressions (Python ints are converted)."""
    return Buffer(name, tuple(_e(d) for d in shape), dtype, **kw)
