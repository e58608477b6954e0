"""The operations that produce tensors, and :class:`Tensor` itself.

A :class:`Tensor` is a named, shaped array that some :class:`Operation` produces. Each tensor
owns a :class:`mlc.tir.Buffer`, so ``A[i, j]`` inside a ``te.compute`` lambda is simply the
loop-IR expression ``BufferLoad(A.buffer, (i, j))``: a tensor expression *is* a tir expression.

=================  =====================================  ==========================
operation          made by                                becomes (create_prim_func)
=================  =====================================  ==========================
``PlaceholderOp``  ``te.placeholder``: an input           a parameter
``ComputeOp``      ``te.compute``: ``out[axis] = body``   one loop nest, one block
``ScanOp``         ``te.scan``: a recurrence              init block + time loop
``ExternOp``       ``te.extern``: an opaque call          one block, no loops
=================  =====================================  ==========================

The constructors are in :mod:`mlc.te.constructors` and :mod:`mlc.te.external`.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from mlc.errors import TEError
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    BufferLoad,
    IntImm,
    IterKind,
    IterVar,
    PrimExpr,
    Range,
    Reduce,
    Var,
    const,
    convert,
)
from mlc.tir.functor import post_order_visit
from mlc.tir.stmt import Buffer, Stmt

# Every tensor, found from its buffer (a BufferLoad in a body names only the buffer).
_TENSOR_OF_BUFFER: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()


def _simplify_sub(hi: PrimExpr, lo: PrimExpr) -> PrimExpr:
    """``hi - lo``, folded when both are constants or ``lo`` is 0."""
    if isinstance(lo, IntImm) and lo.value == 0:
        return hi
    if isinstance(hi, IntImm) and isinstance(lo, IntImm):
        return const(hi.value - lo.value, hi.dtype)
    return hi - lo


def _broadcast(a: Any, b: Any, op: str) -> Tensor:
    from mlc.te.broadcast import broadcast_op  # broadcast builds a te.compute

    return broadcast_op(a, b, op)


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


class ExternOp(Operation):
    """Outputs computed by one opaque statement (``te.extern``), usually a call of a packed
    function: ``body`` reads the input tensors' buffers and writes the outputs' buffers as a
    whole. It has no axes, so no loop of it can be scheduled."""

    def __init__(
        self,
        name: str,
        tag: str,
        attrs: dict[str, Any],
        inputs: Sequence[Tensor],
        shapes: Sequence[tuple[PrimExpr, ...]],
        dtypes: Sequence[str],
    ) -> None:
        self.name = name
        self.tag = tag
        self.attrs = dict(attrs)
        self.inputs = list(inputs)
        self.outputs: list[Tensor] = []
        for k, (shape, dtype) in enumerate(zip(shapes, dtypes)):
            t = Tensor(self, shape, dtype, name if k == 0 else f"{name}_{k}")
            t.value_index = k
            self.outputs.append(t)
        self._output = self.outputs[0]
        self.body: Stmt | None = None  # set by te.extern once fcompute has run

    def output(self, index: int = 0) -> Tensor:
        if not 0 <= index < len(self.outputs):
            raise TEError(
                f"extern {self.name!r} has {len(self.outputs)} output"
                f"{'s' if len(self.outputs) != 1 else ''}; asked for output {index}"
            )
        return self.outputs[index]

    @property
    def num_outputs(self) -> int:
        return len(self.outputs)

    @property
    def input_tensors(self) -> list[Tensor]:
        return list(self.inputs)

    @property
    def axis(self) -> tuple[IterVar, ...]:
        return ()

    @property
    def reduce_axis(self) -> tuple[IterVar, ...]:
        return ()


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
        return _broadcast(self, other, "add")

    def __radd__(self, other: Any) -> Tensor:
        return _broadcast(other, self, "add")

    def __sub__(self, other: Any) -> Tensor:
        return _broadcast(self, other, "subtract")

    def __rsub__(self, other: Any) -> Tensor:
        return _broadcast(other, self, "subtract")

    def __mul__(self, other: Any) -> Tensor:
        return _broadcast(self, other, "multiply")

    def __rmul__(self, other: Any) -> Tensor:
        return _broadcast(other, self, "multiply")

    def __truediv__(self, other: Any) -> Tensor:
        return _broadcast(self, other, "divide")

    def __rtruediv__(self, other: Any) -> Tensor:
        return _broadcast(other, self, "divide")

    def __neg__(self) -> Tensor:
        return _broadcast(0, self, "subtract")


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
