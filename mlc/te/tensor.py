"""Tensors and the operations that produce them: ``placeholder``, ``compute``, ``scan``.

A :class:`Tensor` is a named, shaped array that some :class:`Operation` produces. Each tensor
owns a :class:`mlc.tir.Buffer`, so ``A[i, j]`` inside a ``te.compute`` lambda is simply the
loop-IR expression ``BufferLoad(A.buffer, (i, j))``: a tensor expression *is* a tir expression.

    n = te.var("n")
    A = te.placeholder((n,), name="A")            # an input
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    B.op.axis        # (IterVar(i, [0, n), SPATIAL),) -- `i` is the lambda's own variable
    B.op.body        # (A[i] * 2,)
    B.op.input_tensors   # [A]

``te.create_prim_func([A, B])`` turns such a graph of operations into a loop program.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mlc.errors import MLCTypeError, TEError
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    BufferLoad,
    FloatImm,
    IntImm,
    IterKind,
    IterVar,
    PrimExpr,
    Range,
    Reduce,
    SizeVar,
    Var,
    const,
    convert,
)
from mlc.tir.functor import post_order_visit
from mlc.tir.stmt import Buffer
from mlc.tir.thread_tag import ALL_TAGS

# Every tensor, found from its buffer (a BufferLoad in a body names only the buffer).
_TENSOR_OF_BUFFER: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
# Variables made by te.reduce_axis, to catch a reduce axis used outside a reducer.
_REDUCE_VARS: weakref.WeakSet[Var] = weakref.WeakSet()


# ---------------------------------------------------------------------------------------------
# variables and axes


def var(name: str = "v", dtype: str = "int32") -> SizeVar:
    """A symbolic size, e.g. ``n = te.var("n")`` for ``te.placeholder((n,))``. It binds from
    the arrays' shapes when the function is called. (TVM's ``te.var``; here it is always a
    :class:`~mlc.tir.SizeVar`, a variable known to be >= 0.)"""
    return SizeVar(name, dt.check(dtype))


def size_var(name: str = "size", dtype: str = "int32") -> SizeVar:
    """Same as :func:`var` (TVM has both names)."""
    return var(name, dtype)


def _as_range(dom: Any, what: str) -> Range:
    if isinstance(dom, Range):
        return dom
    if isinstance(dom, (tuple, list)) and len(dom) == 2:
        lo, hi = (_as_int_expr(x, what) for x in dom)
        return Range(lo, _simplify_sub(hi, lo))
    raise TEError(f"{what} needs a domain (lo, hi), e.g. te.reduce_axis((0, n)); got {dom!r}")


def _simplify_sub(hi: PrimExpr, lo: PrimExpr) -> PrimExpr:
    """``hi - lo``, folded when both are constants or ``lo`` is 0."""
    if isinstance(lo, IntImm) and lo.value == 0:
        return hi
    if isinstance(hi, IntImm) and isinstance(lo, IntImm):
        return const(hi.value - lo.value, hi.dtype)
    return hi - lo


def reduce_axis(dom: Any, name: str = "rv") -> IterVar:
    """An axis to reduce over: ``k = te.reduce_axis((0, n), name="k")`` ranges over
    ``0 <= k < n``. Use it inside a reducer: ``te.sum(A[i, k], axis=k)``."""
    rng = _as_range(dom, f"te.reduce_axis(name={name!r})")
    v = Var(name, rng.extent.dtype if dt.is_int(rng.extent.dtype) else "int32")
    _REDUCE_VARS.add(v)
    return IterVar(v, rng, IterKind.REDUCE)


def is_reduce_var(v: Var) -> bool:
    """True for the variable of a ``te.reduce_axis``."""
    return v in _REDUCE_VARS


# ---------------------------------------------------------------------------------------------
# tensors and operations


class Operation:
    """What produces a tensor. ``name`` names the operation and its output tensor."""

    name: str
    tag: str = ""
    attrs: dict[str, Any]

    def output(self, index: int = 0) -> Tensor:
        if index != 0:
            raise TEError(f"operation {self.name!r} has one output; asked for output {index}")
        return self._output

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def input_tensors(self) -> list[Tensor]:
        return []

    _output: Tensor

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class PlaceholderOp(Operation):
    """An input: the caller provides the array."""

    def __init__(self, name: str, shape: tuple[PrimExpr, ...], dtype: str) -> None:
        self.name = name
        self.attrs = {}
        self._output = Tensor(self, shape, dtype, name)

    @property
    def axis(self) -> tuple[IterVar, ...]:
        return ()

    @property
    def reduce_axis(self) -> tuple[IterVar, ...]:
        return ()


class ComputeOp(Operation):
    """``out[axis] = body`` for every point of ``axis``; ``body[0]`` may be a ``Reduce`` over
    ``reduce_axis``."""

    def __init__(
        self,
        name: str,
        tag: str,
        attrs: dict[str, Any],
        axis: tuple[IterVar, ...],
        body: PrimExpr,
    ) -> None:
        self.name = name
        self.tag = tag
        self.attrs = dict(attrs)
        self.axis = axis
        self.body: tuple[PrimExpr, ...] = (body,)
        self.reduce_axis: tuple[IterVar, ...] = body.axis if isinstance(body, Reduce) else ()
        shape = tuple(iv.dom.extent for iv in axis)
        self._output = Tensor(self, shape, body.dtype, name)
        # Hold the inputs strongly: the buffer -> tensor table is weak, and an intermediate
        # tensor that only this op references would otherwise be garbage-collected.
        self._inputs = tensors_read(self.body)

    @property
    def input_tensors(self) -> list[Tensor]:
        return list(self._inputs)


class ScanOp(Operation):
    """A recurrence along the first dimension: rows ``[0, k)`` of the state come from
    ``init`` (of shape ``(k, ...)``), row ``t >= k`` from ``update``, which may read rows
    ``< t`` of the state through ``state_placeholder``."""

    def __init__(
        self,
        name: str,
        tag: str,
        init: Tensor,
        update: Tensor,
        state_placeholder: Tensor,
        inputs: Sequence[Tensor],
    ) -> None:
        self.name = name
        self.tag = tag
        self.attrs = {}
        self.init = init
        self.update = update
        self.state_placeholder = state_placeholder
        self.inputs = list(inputs)
        upd = update.op
        assert isinstance(upd, ComputeOp)
        self.scan_axis = IterVar(
            upd.axis[0].var,
            Range(init.shape[0], _simplify_sub(update.shape[0], init.shape[0])),
            IterKind.ORDERED,
        )
        self._output = Tensor(self, state_placeholder.shape, state_placeholder.dtype, name)

    @property
    def axis(self) -> tuple[IterVar, ...]:
        return (self.scan_axis,)

    @property
    def reduce_axis(self) -> tuple[IterVar, ...]:
        return ()

    @property
    def body_ops(self) -> list[ComputeOp]:
        """The computations between the state and the update (a multi-stage scan's
        ``s_update1`` read by ``s_update2``): computed inside the time loop, one row per
        step, producers first. The update itself is not among them."""
        state = self.state_placeholder
        depends: dict[int, bool] = {}
        order: list[ComputeOp] = []

        def visit(op: Operation) -> bool:
            if id(op) in depends:
                return depends[id(op)]
            depends[id(op)] = False
            found = False
            for t in op.input_tensors:
                if t is state or t.op is state.op:
                    found = True
                elif isinstance(t.op, ComputeOp) and visit(t.op):
                    found = True
            depends[id(op)] = found
            if found and isinstance(op, ComputeOp) and op is not self.update.op:
                order.append(op)
            return found

        visit(self.update.op)
        return order

    @property
    def input_tensors(self) -> list[Tensor]:
        body = {id(op) for op in self.body_ops}
        ops = [self.init.op, self.update.op, *(self.body_ops)]
        found: list[Tensor] = []
        for t in [x for op in ops for x in op.input_tensors] + self.inputs:
            if t is self.state_placeholder or id(t.op) in body:
                continue
            if all(t is not f for f in found):
                found.append(t)
        return found


class Tensor:
    """A named array of ``shape`` and ``dtype`` produced by ``op``. Index it to read it:
    ``A[i, j]`` is ``BufferLoad(A.buffer, (i, j))``."""

    def __init__(self, op: Operation, shape: tuple[PrimExpr, ...], dtype: str, name: str):
        self.op = op
        self.value_index = 0
        self.shape = shape
        self.dtype = dtype
        self.name = name
        self.buffer = Buffer(name, shape, dtype)
        _TENSOR_OF_BUFFER[id(self.buffer)] = self

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices: Any) -> PrimExpr:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != self.ndim:
            raise TEError(
                f"tensor {self.name!r} has shape {_shape_str(self.shape)} ({self.ndim} "
                f"dimension{'s' if self.ndim != 1 else ''}) but was indexed with "
                f"{len(indices)} ind{'ices' if len(indices) != 1 else 'ex'}"
            )
        idx = []
        for d, i in enumerate(indices):
            if isinstance(i, IterVar):
                i = i.var
            if isinstance(i, slice) or isinstance(i, Tensor):
                raise TEError(
                    f"index {d} of tensor {self.name!r} is a {type(i).__name__}; te tensors "
                    "take one expression per dimension, e.g. A[i, j]"
                )
            e = convert(i)
            if not dt.is_int(e.dtype):
                raise TEError(
                    f"index {d} of tensor {self.name!r} is `{e}` of dtype {e.dtype}; "
                    "indices must be integers"
                )
            idx.append(e)
        return BufferLoad(self.buffer, tuple(idx))

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"Tensor(name={self.name!r}, shape={_shape_str(self.shape)}, dtype={self.dtype!r})"

    # Whole-tensor arithmetic, as TVM's topi.add/subtract/multiply/divide: numpy broadcasting
    # (shapes aligned on the right, a size-1 dimension stretches), e.g. batch norm written
    # as (X - Mean) / Std. Each operator makes one te.compute named T_<op>.
    def __add__(self, other: Any) -> Tensor:
        return broadcast_op(self, other, "add")

    def __radd__(self, other: Any) -> Tensor:
        return broadcast_op(other, self, "add")

    def __sub__(self, other: Any) -> Tensor:
        return broadcast_op(self, other, "subtract")

    def __rsub__(self, other: Any) -> Tensor:
        return broadcast_op(other, self, "subtract")

    def __mul__(self, other: Any) -> Tensor:
        return broadcast_op(self, other, "multiply")

    def __rmul__(self, other: Any) -> Tensor:
        return broadcast_op(other, self, "multiply")

    def __truediv__(self, other: Any) -> Tensor:
        return broadcast_op(self, other, "divide")

    def __rtruediv__(self, other: Any) -> Tensor:
        return broadcast_op(other, self, "divide")

    def __neg__(self) -> Tensor:
        return broadcast_op(0, self, "subtract")


_BROADCAST_FN: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
}


def _is_one(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


def _same_size(a: PrimExpr, b: PrimExpr) -> bool:
    if a is b:
        return True
    return isinstance(a, IntImm) and isinstance(b, IntImm) and a.value == b.value


def broadcast_op(a: Any, b: Any, op: str) -> Tensor:
    """``a <op> b`` elementwise with numpy broadcasting; either side may be a scalar."""
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    sa = a.shape if ta else ()
    sb = b.shape if tb else ()
    rank = max(len(sa), len(sb))
    pa = (None,) * (rank - len(sa)) + tuple(sa)
    pb = (None,) * (rank - len(sb)) + tuple(sb)
    out: list[PrimExpr] = []
    for d, (x, y) in enumerate(zip(pa, pb)):
        if x is None or (y is not None and _is_one(x)):
            out.append(y)  # type: ignore[arg-type]
        elif y is None or _is_one(y) or _same_size(x, y):
            out.append(x)
        else:
            na, nb = getattr(a, "name", a), getattr(b, "name", b)
            raise TEError(
                f"{op}: cannot broadcast {na!r} of shape {_shape_str(sa)} with {nb!r} of "
                f"shape {_shape_str(sb)}: dimension {d} is {x} against {y} (sizes must be "
                "equal or 1)"
            )

    def index(t: Tensor, idx: tuple[Any, ...]) -> PrimExpr:
        own = idx[rank - t.ndim :]
        return t[tuple(0 if _is_one(n) else i for n, i in zip(t.shape, own))]

    fn = _BROADCAST_FN[op]

    def body(*idx: Any) -> Any:
        x = index(a, idx) if ta else a
        y = index(b, idx) if tb else b
        return fn(x, y)

    return compute(tuple(out), body, name=f"T_{op}", tag="broadcast")


def tensor_of(buffer: Buffer) -> Tensor | None:
    """The tensor that owns ``buffer`` (None for a buffer made elsewhere)."""
    return _TENSOR_OF_BUFFER.get(id(buffer))


def tensors_read(node: Any) -> list[Tensor]:
    """The tensors loaded under ``node``, in order of first appearance."""
    found: list[Tensor] = []

    def visit(n: Any) -> None:
        if isinstance(n, BufferLoad):
            t = tensor_of(n.buffer)
            if t is not None and all(t is not f for f in found):
                found.append(t)

    for n in node if isinstance(node, (tuple, list)) else (node,):
        post_order_visit(n, visit)
    return found


def _shape_str(shape: Sequence[PrimExpr]) -> str:
    parts = []
    for s in shape:
        if isinstance(s, IntImm):
            parts.append(str(s.value))
        elif isinstance(s, Var):
            parts.append(s.name)
        else:
            parts.append(str(s))
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _as_int_expr(x: Any, what: str) -> PrimExpr:
    if isinstance(x, bool) or isinstance(x, float) or isinstance(x, FloatImm):
        raise TEError(f"{what}: sizes must be integers, got {x!r}")
    try:
        e = convert(x)
    except MLCTypeError as err:
        raise TEError(f"{what}: sizes must be integers or te.var(...), got {x!r}") from err
    if not dt.is_int(e.dtype):
        raise TEError(f"{what}: sizes must be integers, got `{e}` of dtype {e.dtype}")
    return e


def _as_shape(shape: Any, what: str) -> tuple[PrimExpr, ...]:
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TEError(f"{what}: shape must be a tuple like (n, m), got {shape!r}")
    out = []
    for s in shape:
        e = _as_int_expr(s, what)
        if isinstance(e, IntImm) and e.value < 0:
            raise TEError(f"{what}: shape {tuple(shape)!r} has a negative size {e.value}")
        out.append(e)
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# constructors


def placeholder(shape: Any, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor: ``A = te.placeholder((n, m), name="A")`` (dtype float32 by default)."""
    op = PlaceholderOp(name, _as_shape(shape, f"te.placeholder(name={name!r})"), dt.check(dtype))
    return op.output(0)


def _arg_names(fcompute: Callable[..., Any], ndim: int, name: str) -> list[str]:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        return [f"i{d}" for d in range(ndim)]
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return [f"i{d}" for d in range(ndim)]
    positional = [
        p
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    if not (len(required) <= ndim <= len(positional)):
        raise TEError(
            f"te.compute(name={name!r}): the shape has {ndim} dimension"
            f"{'s' if ndim != 1 else ''} so fcompute must take {ndim} index argument"
            f"{'s' if ndim != 1 else ''}, but it takes {len(positional)} "
            f"({', '.join(p.name for p in positional) or 'none'})"
        )
    return [p.name for p in positional[:ndim]]


def compute(
    shape: Any,
    fcompute: Callable[..., Any],
    name: str = "compute",
    tag: str = "",
    attrs: dict[str, Any] | None = None,
) -> Tensor:
    """A tensor whose element at each index is ``fcompute(*index)``.

    ``fcompute`` gets one loop variable per dimension and returns an expression, or a
    reducer call (``te.sum(..., axis=k)``) as the whole body::

        C = te.compute((m, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    """
    what = f"te.compute(name={name!r})"
    shp = _as_shape(shape, what)
    names = _arg_names(fcompute, len(shp), name)
    axis = tuple(
        IterVar(Var(nm, s.dtype if dt.is_int(s.dtype) else "int32"), Range(const(0, s.dtype), s))
        for nm, s in zip(names, shp)
    )
    body = fcompute(*(iv.var for iv in axis))
    if isinstance(body, (tuple, list)):
        if len(body) == 1:
            body = body[0]
        else:
            raise TEError(f"{what}: fcompute returned {len(body)} values; return one expression")
    if isinstance(body, Tensor):
        raise TEError(
            f"{what}: fcompute returned the tensor {body.name!r} itself; return an element of "
            f"it, e.g. {body.name}[i]"
        )
    try:
        body = convert(body)
    except MLCTypeError as err:
        raise TEError(f"{what}: fcompute must return an expression, got {body!r}") from err
    _check_body(body, what)
    return ComputeOp(name, tag, attrs or {}, axis, body).output(0)


def _check_body(body: PrimExpr, what: str) -> None:
    """Reducers only at the top; reduce axes only inside their reducer."""
    top_reduce = body if isinstance(body, Reduce) else None
    allowed: set[int] = set()
    if top_reduce is not None:
        allowed = {id(iv.var) for iv in top_reduce.axis}

    def visit_reduce(n: Any) -> None:
        if isinstance(n, Reduce) and n is not top_reduce:
            raise TEError(
                f"{what}: a reducer (te.sum/te.max/...) must be the whole body of te.compute, "
                "not part of a larger expression such as te.sum(...) + 1. Compute the "
                "reduction in its own te.compute and use it in a second one."
            )

    post_order_visit(body, visit_reduce)

    def visit(n: Any) -> None:
        if isinstance(n, Var) and n in _REDUCE_VARS and id(n) not in allowed:
            raise TEError(
                f"{what}: the reduce axis {n.name!r} is used outside a reducer over it; "
                f"use it inside te.sum(..., axis={n.name}) (or te.max/te.min)"
            )

    post_order_visit(body, visit)


def scan(
    init: Tensor | Sequence[Tensor],
    update: Tensor | Sequence[Tensor],
    state_placeholder: Tensor | Sequence[Tensor],
    inputs: Sequence[Tensor] | None = None,
    name: str = "scan",
    tag: str = "",
) -> Tensor:
    """A recurrence over the first dimension (TVM's ``te.scan``), e.g. cumulative sum::

        s_state = te.placeholder((m, n))
        s_init = te.compute((1, n), lambda _, i: X[0, i])
        s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
        Y = te.scan(s_init, s_update, s_state, inputs=[X])

    Row ``t`` of the result is ``s_init[t]`` for ``t < s_init.shape[0]`` and ``s_update[t]``
    after that, where ``s_update`` reads earlier rows through ``s_state``."""

    def one(x: Tensor | Sequence[Tensor], what: str) -> Tensor:
        if isinstance(x, Tensor):
            return x
        if len(x) == 1 and isinstance(x[0], Tensor):
            return x[0]
        raise TEError(f"te.scan(name={name!r}): {what} must be one tensor (one state)")

    ini, upd, state = one(init, "init"), one(update, "update"), one(state_placeholder, "state")
    if not isinstance(state.op, PlaceholderOp):
        raise TEError(f"te.scan(name={name!r}): the state must be a te.placeholder")
    for t, what in ((ini, "init"), (upd, "update")):
        if not isinstance(t.op, ComputeOp):
            raise TEError(f"te.scan(name={name!r}): {what} must be a te.compute")
        if t.ndim != state.ndim or t.ndim == 0:
            raise TEError(
                f"te.scan(name={name!r}): {what} {t.name!r} has shape {_shape_str(t.shape)} "
                f"but the state has {_shape_str(state.shape)}; they need the same rank"
            )
        if t.dtype != state.dtype:
            raise TEError(
                f"te.scan(name={name!r}): {what} {t.name!r} is {t.dtype} but the state is "
                f"{state.dtype}"
            )
    return ScanOp(name, tag, ini, upd, state, inputs or []).output(0)


@dataclass(frozen=True, eq=False, repr=False)
class ThreadAxis(IterVar):
    """A GPU thread axis for ``s[C].bind(ax, te.thread_axis("threadIdx.x"))``."""

    thread_tag: str = ""

    def __repr__(self) -> str:
        return f"thread_axis({self.thread_tag!r})"


def thread_axis(dom: Any = None, tag: str = "", name: str = "") -> ThreadAxis:
    """A thread axis by its tag: ``te.thread_axis("threadIdx.x")`` or, with an extent,
    ``te.thread_axis((0, 32), "threadIdx.x")``."""
    if isinstance(dom, str):
        dom, tag = None, dom
    if tag not in ALL_TAGS:
        raise TEError(f"te.thread_axis: unknown tag {tag!r}; use one of {', '.join(ALL_TAGS)}")
    rng = _as_range(dom, f"te.thread_axis({tag!r})") if dom is not None else Range(
        const(0), SizeVar(tag + ".extent")
    )
    return ThreadAxis(Var(name or tag), rng, IterKind.OPAQUE, tag)
