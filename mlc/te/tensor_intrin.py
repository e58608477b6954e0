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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlc.errors import TEError
from mlc.te.prim_func import create_prim_func
from mlc.te.tensor import Operation, Tensor
from mlc.tir.schedule import Schedule
from mlc.tir.stmt import PrimFunc
from mlc.tir.tensor_intrin import TensorIntrin


def decl_tensor_intrin(
    op: Operation | Tensor,
    fimpl: PrimFunc | Callable[[Schedule], Any] | None = None,
    name: str = "tensor_intrin",
    override: bool = False,
) -> TensorIntrin:
    """Declare (and register under ``name``) the intrinsic computing ``op``.

    ``fimpl`` is how the hardware does it:

    * a callable ``fimpl(sch)`` that schedules a ``tir.Schedule`` of the description (vectorize,
      unroll, reorder...); its result is the implementation;
    * a PrimFunc with the description's parameters (inputs of ``op`` in order, then the
      output);
    * ``None``: the description itself (useful to try tensorize before writing a kernel).

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
