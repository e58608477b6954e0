"""Schedule primitive that changes how a buffer is laid out in memory: ``transform_layout``.

A packed panel of a GEMM is the classic use. Copied as it is read, the panel of ``B`` that
one thread keeps is ``kc x nc`` row-major, and the micro-kernel, which reads only ``nr`` of
every ``nc`` columns, walks it with a stride of ``nc`` floats: its rows fall into a few of
the L1 cache's sets and evict one another. Stored as ``[nc / nr][kc][nr]`` (BLIS's layout)
the micro-kernel reads one contiguous stream::

    sch.transform_layout(copy, "B_global", lambda k, j: (j // 16, k, j % 16))

The index map is a lambda of the buffer's indices made of ``+ - * // %`` and integer
constants; the new shape is the range of each result. The map must be one-to-one (checked)
and the buffer one the function allocates (a parameter's layout belongs to the caller).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from mlc.tir.expr import BufferLoad, IntImm, PrimExpr, Range, const
from mlc.tir.functor import IRMutator
from mlc.tir.schedule.base import ScheduleBase
from mlc.tir.schedule.trace import BlockRV
from mlc.tir.stmt import Buffer, BufferRegion, BufferStore

IndexMap = Callable[..., Any]

_CHECKED_POINTS = 1 << 24  # one-to-one is checked point by point up to this many elements


class LayoutPrimitives(ScheduleBase):
    """``transform_layout``."""

    def transform_layout(
        self, block: BlockRV, buffer: str, index_map: str | IndexMap
    ) -> None:
        """Store ``buffer`` (one ``block`` reads or writes, allocated by the function) with
        element ``[i, j, ...]`` at ``index_map(i, j, ...)``: every load, store, region and
        the allocation change; what the program computes does not.

        Before::

            B_global = alloc_buffer((1024, 1024))
            for k, j in grid(256, 64):
                with block("B_global"):  B_global[v0, v1] = B[v0, v1]
            ... B_global[vk, vj] ...

        ``sch.transform_layout(sch.get_block("B_global"), "B_global",
        lambda k, j: (j // 16, k, j % 16))``::

            B_global = alloc_buffer((64, 1024, 16))
            for k, j in grid(256, 64):
                with block("B_global"):  B_global[v1 // 16, v0, v1 % 16] = B[v0, v1]
            ... B_global[vj // 16, vk, vj % 16] ...

        ``compact_buffers`` then keeps only the tile one iteration touches
        (``[4][256][16]`` under ``compute_at``), as it does for any buffer.
        """
        realize, _ = self._block_of(block)
        name = realize.block.name
        regions = [*realize.block.reads, *realize.block.writes]
        buf = next((r.buffer for r in regions if r.buffer.name == buffer), None)
        if buf is None:
            raise self._error(
                f"transform_layout: block {name!r} does not access a buffer named "
                f"{buffer!r}; it accesses {sorted({r.buffer.name for r in regions})}", realize)
        if buf in self._func.params:
            raise self._error(
                f"transform_layout: {buffer!r} is a parameter of the function; its layout is "
                "the caller's. Copy it first (cache_read / cache_write) and transform the copy",
                realize)
        shape = [d.value if isinstance(d, IntImm) else None for d in buf.shape]
        if any(s is None for s in shape) or buf.strides:
            raise self._error(
                f"transform_layout: {buffer!r} has shape {buf.shape}"
                + (f" and strides {buf.strides}" if buf.strides else "")
                + "; only compact buffers of constant shape can change layout", realize)
        try:
            text = (index_map if isinstance(index_map, str)
                    else _lambda_text(index_map, len(shape)))
        except Exception as exc:  # the student's own function raised: say so, typed
            raise self._error(f"transform_layout: the index map {index_map!r} could not be "
                              f"read ({type(exc).__name__}: {exc}); write it as a lambda "
                              "of the buffer's indices made of + - * // % and integers",
                              realize) from None
        try:
            params, body = _parse(text)
        except ValueError as exc:
            raise self._error(f"transform_layout: index map {text!r}: {exc}", realize) from None
        if len(params) != len(shape):
            raise self._error(
                f"transform_layout: the index map takes {len(params)} indices but "
                f"{buffer!r} has {len(shape)} dimensions {tuple(shape)}", realize)
        new_shape = _check_one_to_one(params, body, [int(s) for s in shape if s is not None])
        if isinstance(new_shape, str):
            raise self._error(f"transform_layout: index map {text!r} {new_shape}", realize)
        dtype = buf.shape[0].dtype if buf.shape else "int32"
        new = Buffer(buf.name, tuple(const(s, dtype) for s in new_shape), buf.dtype, buf.scope)

        def fmap(indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
            env = dict(zip(params, indices))
            return tuple(_as_expr(_evaluate(e, env), dtype) for e in body)

        body_new = _Relayout(buf, new, fmap).visit(self._func.body)
        self._update(self._func.with_body(body_new))
        self._record(
            "transform_layout", {"block": block, "buffer": buffer, "index_map": text}, None)


# ---------------------------------------------------------------------------------------------
# the index map: parsed from its text (a trace stores the text), never eval'd


def _lambda_text(fn: IndexMap, ndim: int) -> str:
    """``lambda k, j: (j // 16, k, j % 16)`` for a Python callable, by calling it on
    variables and printing what it returns."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    if len(names) != ndim:
        names = [f"i{d}" for d in range(ndim)] if not names else names
    out = fn(*[_Sym(n) for n in names])
    items = out if isinstance(out, (tuple, list)) else (out,)
    return f"lambda {', '.join(names)}: ({', '.join(str(x) for x in items)},)"


class _Sym:
    """A symbolic index that prints the expression built from it (for ``_lambda_text``)."""

    def __init__(self, text: str, prec: int = 3) -> None:
        self.text, self.prec = text, prec

    def __str__(self) -> str:
        return self.text

    def _op(self, other: Any, sym: str, prec: int, right: bool = False) -> _Sym:
        if not isinstance(other, (_Sym, int)) or isinstance(other, bool):
            raise ValueError(f"uses {other!r}; only integers may appear")
        o = other if isinstance(other, _Sym) else _Sym(str(other))
        a, b = (o, self) if right else (self, o)
        left = a.text if a.prec >= prec else f"({a.text})"
        rhs = b.text if b.prec > prec else f"({b.text})"
        return _Sym(f"{left} {sym} {rhs}", prec)

    def __add__(self, o: Any) -> _Sym:
        return self._op(o, "+", 1)

    def __radd__(self, o: Any) -> _Sym:
        return self._op(o, "+", 1, True)

    def __sub__(self, o: Any) -> _Sym:
        return self._op(o, "-", 1)

    def __rsub__(self, o: Any) -> _Sym:
        return self._op(o, "-", 1, True)

    def __mul__(self, o: Any) -> _Sym:
        return self._op(o, "*", 2)

    def __rmul__(self, o: Any) -> _Sym:
        return self._op(o, "*", 2, True)

    def __floordiv__(self, o: Any) -> _Sym:
        return self._op(o, "//", 2)

    def __mod__(self, o: Any) -> _Sym:
        return self._op(o, "%", 2)

    def __neg__(self) -> _Sym:  # `lambda i, j: (-i + 7, j)`, as the text form allows
        return _Sym(f"-{self.text}" if self.prec >= 3 else f"-({self.text})", 3)


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}


def _parse(text: str) -> tuple[list[str], list[ast.expr]]:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"is not Python ({exc.msg})") from None
    if not isinstance(tree, ast.Lambda) or tree.args.vararg or tree.args.kwarg:
        raise ValueError("must be a lambda of the buffer's indices, e.g. "
                         "'lambda i, j: (j // 16, i, j % 16)'")
    params = [a.arg for a in tree.args.args]
    body = list(tree.body.elts) if isinstance(tree.body, (ast.Tuple, ast.List)) else [tree.body]
    for e in body:
        for node in ast.walk(e):
            if isinstance(node, ast.Name) and node.id not in params:
                raise ValueError(f"uses {node.id!r}, which is not one of its indices {params}")
            if isinstance(node, ast.Constant) and not isinstance(node.value, int):
                raise ValueError(f"has the constant {node.value!r}; only integers may appear")
            if isinstance(node, ast.BinOp) and type(node.op) not in _BINOPS:
                raise ValueError("may only use + - * // % (and integers)")
            if not isinstance(node, (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp,
                                     ast.USub, ast.Load, *_BINOPS)):
                raise ValueError(f"contains {type(node).__name__}; only + - * // % of the "
                                 "indices and integers are allowed")
    return params, body


def _evaluate(e: ast.expr, env: dict[str, Any]) -> Any:
    """``e`` with each index bound in ``env``: PrimExprs give a PrimExpr, numpy arrays an
    array (``//`` and ``%`` round toward minus infinity in both)."""
    if isinstance(e, ast.Name):
        return env[e.id]
    if isinstance(e, ast.Constant):
        return e.value
    if isinstance(e, ast.UnaryOp):
        return -_evaluate(e.operand, env)
    assert isinstance(e, ast.BinOp)
    a, b = _evaluate(e.left, env), _evaluate(e.right, env)
    op = type(e.op)
    if op is ast.Add:
        return a + b
    if op is ast.Sub:
        return a - b
    if op is ast.Mult:
        return a * b
    if op is ast.FloorDiv:
        return a // b
    return a % b


def _as_expr(value: Any, dtype: str) -> PrimExpr:
    return value if isinstance(value, PrimExpr) else const(int(value), dtype)


def _check_one_to_one(params: list[str], body: list[ast.expr], shape: list[int]) -> list[int] | str:
    """The new shape (one past the largest value of each result), or what is wrong: a
    result below zero, a division by zero, two elements sent to one place."""
    size = int(np.prod(shape)) if shape else 1
    if size > _CHECKED_POINTS:
        return f"is checked on buffers of at most {_CHECKED_POINTS} elements; this one has {size}"
    grids: Any = np.indices(shape, dtype=np.int64).reshape(len(shape), -1) if shape else []
    env = {p: grids[d] for d, p in enumerate(params)}
    outs = []
    with np.errstate(divide="raise"):
        for e in body:
            try:
                v = np.broadcast_to(np.asarray(_evaluate(e, env), dtype=np.int64), (size,))
            except (FloatingPointError, ZeroDivisionError):
                return "divides by zero"
            if size and v.min() < 0:
                return f"gives {int(v.min())} for result {ast.unparse(e)!r}; indices must be >= 0"
            outs.append(v)
    new_shape = [int(v.max()) + 1 if size else 1 for v in outs]
    if int(np.prod(new_shape)) != size:
        return (f"is not one-to-one onto its range: {tuple(shape)} ({size} elements) becomes "
                f"{tuple(new_shape)} ({int(np.prod(new_shape))}); split dimensions by factors "
                "that divide them")
    flat = np.ravel_multi_index(outs, new_shape) if outs else np.zeros(size, np.int64)
    if size and np.bincount(flat, minlength=size).max() > 1:
        return "sends two elements to the same place"
    return new_shape


class _Relayout(IRMutator):
    """Every access of ``old`` becomes an access of ``new`` at ``fmap(indices)``."""

    def __init__(self, old: Buffer, new: Buffer,
                 fmap: Callable[[tuple[PrimExpr, ...]], tuple[PrimExpr, ...]]) -> None:
        self.old, self.new, self.fmap = old, new, fmap

    def visit_Buffer(self, node: Buffer) -> Any:
        return self.new if node is self.old else node

    def visit_BufferLoad(self, op: BufferLoad) -> Any:
        if op.buffer is not self.old:
            return self.generic_visit(op)
        indices = tuple(self.visit(i) for i in op.indices)
        return BufferLoad(self.new, self.fmap(indices))

    def visit_BufferStore(self, op: BufferStore) -> Any:
        if op.buffer is not self.old:
            return self.generic_visit(op)
        indices = tuple(self.visit(i) for i in op.indices)
        return BufferStore(self.new, self.visit(op.value), self.fmap(indices))

    def visit_BufferRegion(self, op: BufferRegion) -> Any:
        if op.buffer is not self.old:
            return self.generic_visit(op)
        if all(isinstance(r.extent, IntImm) and r.extent.value == 1 for r in op.region):
            idx = self.fmap(tuple(self.visit(r.min) for r in op.region))
            return BufferRegion(self.new, tuple(Range(i, const(1, i.dtype)) for i in idx))
        # a region wider than a point: the whole of the new buffer (a safe over-estimate)
        return BufferRegion(self.new, tuple(Range(const(0, d.dtype), d) for d in self.new.shape))
