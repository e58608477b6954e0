"""``te.decl_tensor_intrin``: declare a tensor intrinsic in the te style (seed 003).

TVM's classic API describes an intrinsic with a te computation on small placeholders and a
function that emits the instruction calls. mlc keeps the call shape and simplifies the
second half: the implementation is a schedule of the same small computation (or any
PrimFunc with the same parameters). The seed's accelerator example, ported::

    def gemm8x8():
        a = te.placeholder((8, 8), name="a")
        b = te.placeholder((8, 8), name="b")
        k = te.reduce_axis((0, 8), name="k")
        c = te.compute((8, 8), lambda y, x: te.sum(a[k, y] * b[k, x], axis=k), name="c")

        def impl(sch):                    # a tir.Schedule of the same 8x8x8 computation
            y, x, k = sch.get_loops(sch.get_block("c"))
            sch.reorder(y, k, x)
            sch.unroll(k)
            sch.vectorize(x)

        return te.decl_tensor_intrin(c.op, impl, name="vdla.gemm8x8")

    s = te.create_schedule(C.op)
    y, x = C.op.axis
    yo, yi = s[C].split(y, factor=8); xo, xi = s[C].split(x, factor=8)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=8)
    s[C].reorder(yo, xo, ko, yi, xi, ki)
    s[C].tensorize(yi, gemm8x8())         # the 8x8x8 tile now runs the micro-kernel

The description is ``te.create_prim_func(op.input_tensors + [op.output(0)])``; for a
reduction only the update is compared (the tile keeps its own zeroing, as TVM's
``reduce_reset``/``reduce_update`` pair does).

TVM's own form works too: a lowering function ``fimpl(inputs, outputs)`` that returns the
statement(s) calling the hardware, as the notes declare ``gemm8x8``::

    def gemm_intrin_lower(inputs, outputs):
        ww_ptr = inputs[0].access_ptr("r")
        xx_ptr = inputs[1].access_ptr("r")
        zz_ptr = outputs[0].access_ptr("w")
        compute = te.hardware_intrin("gemm8x8", ww_ptr, xx_ptr, zz_ptr)
        reset = te.hardware_intrin("fill_zero", zz_ptr)
        update = te.hardware_intrin("fuse_gemm8x8_add", ww_ptr, xx_ptr, zz_ptr)
        return compute, reset, update

    gemm8x8 = te.decl_tensor_intrin(y.op, gemm_intrin_lower, name="vdla.gemm8x8")

``access_ptr`` is the address of the tile's first element (``tir.access_ptr(A[0, 0], "r")``,
which tensorize moves onto the real tile); ``hardware_intrin`` is a call the target's
lowering turns into an instruction. Of the three statements mlc keeps ``update`` as the
implementation (tensorize matches the update) and ``reset`` as the tile's init: the
tensorized tile starts with the declared ``fill_zero(C_tile)`` call, not a zeroing loop.
The target that has the instructions lowers them (``vdla``); building for the CPU says so.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mlc.errors import TEError
from mlc.te.prim_func import create_prim_func
from mlc.te.tensor import Operation, Tensor
from mlc.tir.expr import BufferLoad, Call, PrimExpr, StringImm, const
from mlc.tir.schedule import Schedule
from mlc.tir.stmt import Block, BlockRealize, Buffer, Evaluate, PrimFunc, Stmt
from mlc.tir.tensor_intrin import TensorIntrin


def decl_tensor_intrin(
    op: Operation | Tensor,
    fimpl: PrimFunc | Callable[..., Any] | None = None,
    name: str = "tensor_intrin",
    override: bool = False,
) -> TensorIntrin:
    """Declare (and register under ``name``) the intrinsic computing ``op``.

    ``fimpl`` is how the hardware does it:

    * a callable ``fimpl(sch)`` that schedules a ``tir.Schedule`` of the description (vectorize,
      unroll, reorder...); its result is the implementation;
    * a PrimFunc with the description's parameters (inputs of ``op`` in order, then the
      output);
    * ``None``: the description itself (useful to try tensorize before writing a kernel);
    * TVM's lowering function ``fimpl(inputs, outputs)`` returning ``te.hardware_intrin``
      calls (one statement, or ``(compute, reset, update)``: mlc keeps ``update`` and
      ``reset``, which becomes the tile's init).

    Returns the registered :class:`mlc.tir.TensorIntrin`; pass it (or its name) to
    ``s[C].tensorize(axis, intrin)`` or ``sch.tensorize(loop, intrin)``.
    """
    if isinstance(op, Tensor):
        op = op.op
    if not isinstance(op, Operation) or not hasattr(op, "input_tensors"):
        raise TEError(
            f"te.decl_tensor_intrin: the first argument is the te operation the intrinsic "
            f"computes (c.op for c = te.compute(...)), got {type(op).__name__}")
    tensors = [*op.input_tensors, op.output(0)]
    desc = create_prim_func(tensors, name=f"{name}_desc")
    if fimpl is None:
        impl = create_prim_func(tensors, name=f"{name}_impl")
    elif isinstance(fimpl, PrimFunc):
        impl = fimpl
    elif callable(fimpl) and _takes_two_arguments(fimpl):
        impl, reset = _lowered_impl(desc, fimpl, name)
        return TensorIntrin.register(name, desc, impl, override=override, reset=reset)
    elif callable(fimpl):
        sch = Schedule(create_prim_func(tensors, name=f"{name}_impl"))
        result = fimpl(sch)
        impl = result if isinstance(result, PrimFunc) else sch.mod
    else:
        raise TEError(
            f"te.decl_tensor_intrin({name!r}): the implementation must be a function "
            f"fimpl(sch) that schedules the description, a PrimFunc, or None; got "
            f"{type(fimpl).__name__}")
    return TensorIntrin.register(name, desc, impl, override=override)


class IntrinBuffer:
    """A parameter of a tensor intrinsic as its lowering function sees it (TVM's
    ``decl_buffer``): ``name``, ``shape``, ``dtype`` and :meth:`access_ptr`."""

    def __init__(self, buffer: Buffer) -> None:
        self.buffer = buffer
        self.name, self.shape, self.dtype = buffer.name, buffer.shape, buffer.dtype

    def access_ptr(self, access_mask: str = "rw") -> PrimExpr:
        """The address of the tile's first element, for a hardware call:
        ``access_ptr(A[0, 0], "r")``; tensorize moves it onto the tile it replaces."""
        if access_mask not in ("r", "w", "rw"):
            raise TEError(f"access_ptr: the mask is 'r', 'w' or 'rw', got {access_mask!r}")
        first = BufferLoad(self.buffer, tuple(const(0) for _ in self.buffer.shape))
        return Call("handle", "access_ptr", (first, StringImm(access_mask)))

    def __repr__(self) -> str:
        return f"IntrinBuffer({self.name})"


def hardware_intrin(name: str, *args: PrimExpr) -> Stmt:
    r"""A statement calling the hardware instruction ``name`` with ``args`` (usually
    ``access_ptr``\ s): what a tensor intrinsic's lowering function returns. The target that
    owns the instruction lowers the call (``mlc.target.vdla``)."""
    if not isinstance(name, str) or not name:
        raise TEError(f"hardware_intrin: the first argument is the instruction's name, got "
                      f"{name!r}")
    return Evaluate(Call("int32", name, tuple(args)))


def _takes_two_arguments(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and p.default is p.empty]
    return len(positional) == 2


def _lowered_impl(desc: PrimFunc, fimpl: Callable[..., Any],
                  name: str) -> tuple[PrimFunc, PrimFunc | None]:
    """The implementation (the ``update``) and the reset from a TVM-style lowering function
    ``fimpl(inputs, outputs)``."""
    params = [IntrinBuffer(b) for b in desc.params]
    result = fimpl(params[:-1], params[-1:])
    reset = None
    if isinstance(result, (tuple, list)):
        if len(result) != 3:
            raise TEError(
                f"te.decl_tensor_intrin({name!r}): a lowering function returns one statement or "
                f"(compute, reset, update); got {len(result)} values")
        reset, result = result[1], result[2]
        if reset is not None and not isinstance(reset, Stmt):
            raise TEError(
                f"te.decl_tensor_intrin({name!r}): the reset must be a statement "
                f"(te.hardware_intrin('fill_zero', ptr)) or None, got {type(reset).__name__}")
    if not isinstance(result, Stmt):
        raise TEError(
            f"te.decl_tensor_intrin({name!r}): the lowering function must return statements "
            f"(te.hardware_intrin(...)), got {type(result).__name__}")

    def func(stmt: Stmt, role: str) -> PrimFunc:
        root = Block("root", (), (), (), stmt)
        return PrimFunc(desc.params, BlockRealize((), const(True), root), f"{name}_{role}")

    return func(result, "impl"), None if reset is None else func(reset, "reset")
