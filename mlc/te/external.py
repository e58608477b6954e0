"""``te.extern``: a stage computed by a call out of the program, as in TVM.

    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    C = te.extern((n, m), [A, B],
                  lambda ins, outs: tir.call_packed("tvm.contrib.cblas.matmul",
                                                    ins[0], ins[1], outs[0], False, False),
                  name="C")
    D = te.compute(C.shape, lambda i, j: C[i, j] + bias[j], name="D")

``fcompute(ins, outs)`` gets the buffers of the inputs and of the outputs and returns a
statement, or an expression (a call) that becomes one. ``create_prim_func`` makes it one
block with no loops that reads every input and writes every output as a whole::

    with T.block("C"):
        T.reads(A[0:n, 0:l], B[0:l, 0:m])
        T.writes(C[0:n, 0:m])
        T.evaluate(T.call_packed("tvm.contrib.cblas.matmul", T.buffer_arg(A[0, 0], n, l),
                                 ...))

The block is opaque: a schedule cannot split, reorder, inline or move it (it has no loops,
and what the call does inside is unknown), but the compute stages around it schedule as
usual.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mlc.errors import MLCTypeError, TEError
from mlc.te.constructors import _as_shape
from mlc.te.operation import ExternOp, Tensor, _shape_str
from mlc.tir import dtype as dt
from mlc.tir.call import PACKED, buffer_of
from mlc.tir.expr import BufferLoad, Call, PrimExpr, StringImm, convert
from mlc.tir.functor import IRMutator, post_order_visit
from mlc.tir.stmt import Buffer, BufferStore, Evaluate, Stmt


def _shapes(shape: Any, name: str) -> tuple[list[tuple[PrimExpr, ...]], bool]:
    """The output shapes, and whether there are several (a list of shapes)."""
    what = f"te.extern(name={name!r})"
    many = isinstance(shape, list) and len(shape) > 0 and all(
        isinstance(s, (tuple, list)) for s in shape
    )
    if many:
        return [_as_shape(s, what) for s in shape], True
    return [_as_shape(shape, what)], False


def _dtypes(dtype: Any, n: int, inputs: Sequence[Tensor], name: str) -> list[str]:
    if dtype is None:
        return [inputs[0].dtype if inputs else "float32"] * n
    if isinstance(dtype, str):
        return [dt.check(dtype)] * n
    dtypes = list(dtype)
    if len(dtypes) != n:
        raise TEError(
            f"te.extern(name={name!r}): {n} output shape{'s' if n != 1 else ''} but "
            f"{len(dtypes)} dtypes"
        )
    return [dt.check(d) for d in dtypes]


def _own_buffers(given: Sequence[Buffer] | None, tensors: Sequence[Tensor], what: str,
                 name: str) -> list[Buffer]:
    """The buffers ``fcompute`` sees: the tensors' own, or ``in_buffers``/``out_buffers``
    (which must match the tensors in shape and dtype)."""
    if given is None:
        return [t.buffer for t in tensors]
    given = list(given)
    if len(given) != len(tensors):
        raise TEError(
            f"te.extern(name={name!r}): {len(given)} {what} for {len(tensors)} tensors"
        )
    for b, t in zip(given, tensors):
        if not isinstance(b, Buffer):
            raise TEError(f"te.extern(name={name!r}): {what} must be tir.Buffer, got {b!r}")
        same = len(b.shape) == len(t.shape) and all(
            str(x) == str(y) for x, y in zip(b.shape, t.shape)
        )
        if not same or b.dtype != t.dtype:
            raise TEError(
                f"te.extern(name={name!r}): {what[:-1]} {b.name!r} is {_shape_str(b.shape)} "
                f"{b.dtype} but tensor {t.name!r} is {_shape_str(t.shape)} {t.dtype}"
            )
    return given


class _Rebind(IRMutator):
    """Loads and stores of the buffers ``fcompute`` saw become those of the tensors."""

    def __init__(self, mapping: dict[int, Buffer]) -> None:
        self.mapping = mapping

    def visit_BufferLoad(self, op: BufferLoad) -> PrimExpr:
        indices = tuple(self.visit(i) for i in op.indices)
        return BufferLoad(self.mapping.get(id(op.buffer), op.buffer), indices)

    def visit_BufferStore(self, op: BufferStore) -> Stmt:
        buf = self.mapping.get(id(op.buffer), op.buffer)
        return BufferStore(buf, self.visit(op.value), tuple(self.visit(i) for i in op.indices))


def extern(
    shape: Any,
    inputs: Sequence[Tensor],
    fcompute: Callable[[list[Buffer], list[Buffer]], Any],
    name: str = "extern",
    dtype: str | Sequence[str] | None = None,
    in_buffers: Sequence[Buffer] | None = None,
    out_buffers: Sequence[Buffer] | None = None,
    tag: str = "",
    attrs: dict[str, Any] | None = None,
) -> Tensor | list[Tensor]:
    """Tensors of ``shape`` computed by the statement ``fcompute(ins, outs)`` returns (TVM's
    ``te.extern``). ``ins`` are the buffers of ``inputs``, ``outs`` those of the outputs;
    the statement is usually a call: ``tir.call_packed(name, ins[0], outs[0])``.

    ``shape`` may be a list of shapes for several outputs (then a list of tensors is
    returned, and ``dtype`` may be a list). ``dtype`` defaults to the first input's."""
    what = f"te.extern(name={name!r})"
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]  # type: ignore[list-item]
    for t in inputs:
        if not isinstance(t, Tensor):
            raise TEError(f"{what}: inputs must be te tensors, got {t!r}")
    shapes, many = _shapes(shape, name)
    op = ExternOp(name, tag, attrs or {}, inputs, shapes, _dtypes(dtype, len(shapes), inputs,
                                                                  name))
    ins = _own_buffers(in_buffers, inputs, "in_buffers", name)
    outs = _own_buffers(out_buffers, op.outputs, "out_buffers", name)
    body = fcompute(ins, outs)
    if isinstance(body, (int, float, PrimExpr)) and not isinstance(body, bool):
        try:
            body = Evaluate(convert(body))
        except MLCTypeError as err:  # pragma: no cover - convert takes numbers
            raise TEError(f"{what}: {err}") from err
    if not isinstance(body, Stmt):
        raise TEError(
            f"{what}: fcompute(ins, outs) must return a statement or a call, e.g. "
            f"tir.call_packed(\"name\", ins[0], outs[0]); got {body!r}"
        )
    mapping = {id(b): t.buffer for b, t in zip([*ins, *outs], [*inputs, *op.outputs])}
    if any(b is not t.buffer for b, t in zip([*ins, *outs], [*inputs, *op.outputs])):
        body = _Rebind(mapping).visit(body)
    _check_buffers(body, inputs, op.outputs, what)
    op.body = body
    return list(op.outputs) if many else op.outputs[0]


def _check_buffers(body: Stmt, inputs: list[Tensor], outputs: list[Tensor], what: str) -> None:
    """Every buffer the statement touches is an input's or an output's."""
    known = {id(t.buffer) for t in [*inputs, *outputs]}

    def visit(n: Any) -> None:
        buf = None
        if isinstance(n, (BufferLoad, BufferStore)):
            buf = n.buffer
        elif isinstance(n, Call):
            buf = buffer_of(n)
        if buf is not None and id(buf) not in known:
            raise TEError(
                f"{what}: the statement uses buffer {buf.name!r}, which is neither an input "
                "nor an output; add its tensor to the inputs and use ins[k]"
            )

    post_order_visit(body, visit)


def describe(op: ExternOp) -> str:
    """What the extern stage calls, for messages: ``packed function 'f'``."""
    body = op.body
    if isinstance(body, Evaluate) and isinstance(body.value, Call) and body.value.args:
        name = body.value.args[0]
        if isinstance(name, StringImm):
            kind = "packed function" if body.value.op == PACKED else "C function"
            return f"{kind} {name.value!r}"
    return "a statement of te.extern"
