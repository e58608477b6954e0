"""``mlc.lower`` and ``mlc.build``: from a schedule to the loop program, and to machine code.

Both accept what TVM's do:

* a ``PrimFunc`` (from ``te.create_prim_func`` or ``tir.Schedule(...).mod``);
* a ``tir.Schedule`` (its ``.mod`` is used);
* a te schedule from ``te.create_schedule`` with ``args``, the tensors that become the
  function's parameters, in order;
* a list of te tensors (no schedule: the default loop nest).

::

    print(mlc.lower(s, [A, B, C]))                 # the lowered loop program
    f = mlc.build(s, [A, B, C], target="llvm", name="add")
    f(a, b, c)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from mlc.codegen.target import Target, parse_target
from mlc.errors import MLCTypeError
from mlc.runtime.module import Module, compile_lowered
from mlc.tir.stmt import Block, BlockRealize, PrimFunc


def _to_prim_func(obj: Any, args: Sequence[Any] | None, name: str | None) -> PrimFunc:
    if isinstance(obj, PrimFunc):
        func = obj
    elif isinstance(getattr(obj, "mod", None), PrimFunc):  # tir.Schedule
        func = obj.mod
    elif hasattr(obj, "to_prim_func"):  # te.create_schedule(...)
        if args is None:
            raise MLCTypeError(
                "building a te schedule needs the tensors that become the function's "
                "arguments: mlc.build(s, [A, B, C])"
            )
        func = obj.to_prim_func(list(args))
    elif isinstance(obj, (list, tuple)):
        from mlc import te

        func = te.create_prim_func(list(obj))
    else:
        raise MLCTypeError(
            "mlc.build/mlc.lower take a PrimFunc, a tir.Schedule, a te schedule with its "
            f"argument tensors, or a list of te tensors; got {type(obj).__name__}"
        )
    if name is not None and name != func.name:
        func = replace(func, name=name)
    return func


def _has_blocks(func: PrimFunc) -> bool:
    """Is ``func`` still at the block level (not yet lowered)?"""
    found = False

    def walk(s: Any) -> None:
        nonlocal found
        if found or isinstance(s, (Block, BlockRealize)):
            found = True
            return
        for field in getattr(s, "__dataclass_fields__", {}):
            value = getattr(s, field)
            for v in value if isinstance(value, tuple) else (value,):
                if hasattr(v, "__dataclass_fields__") and not hasattr(v, "dtype"):
                    walk(v)

    walk(func.body)
    return found


def lower(obj: Any, args: Sequence[Any] | None = None, name: str | None = None) -> PrimFunc:
    """The lowered loop program: flat buffers, loops and vectors, no blocks. Print it."""
    from mlc.lower.pipeline import lower as lower_func

    return lower_func(_to_prim_func(obj, args, name))


def build(
    obj: Any,
    args: Sequence[Any] | None = None,
    target: str | dict[str, Any] | Target | None = "llvm",
    name: str | None = None,
) -> Module:
    """Lower and compile; returns a :class:`mlc.runtime.Module` you call with numpy arrays.

    ``target`` is ``"llvm"`` (this CPU), ``"llvm -mcpu=..."``, ``{"kind": "llvm", "mcpu":
    ...}`` or ``"c"`` (the same machine code, plus C source in ``get_source("c")``);
    ``"cuda"`` (CUDA C in ``get_source("cuda")``, run on a GPU) or ``"cuda-sim"`` (the same
    kernels run on the CPU with GPU semantics) for schedules bound to blockIdx/threadIdx.
    """
    tgt = parse_target(target)
    func = _to_prim_func(obj, args, name)
    if _has_blocks(func):
        from mlc.lower.pipeline import lower as lower_func

        func = lower_func(func)
    if tgt.kind in ("cuda", "cuda-sim"):
        from mlc.runtime.cuda import build_cuda

        return build_cuda(func, tgt)
    return compile_lowered(func, tgt, func.name)
