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

from mlc import config
from mlc.errors import CodegenError, MLCTypeError
from mlc.target import Target, parse_target
from mlc.target import build as target_build
from mlc.target import lower as target_lower
from mlc.tir.stmt import PrimFunc


def to_prim_func(obj: Any, args: Sequence[Any] | None, name: str | None) -> PrimFunc:
    if isinstance(obj, PrimFunc):
        func = obj
    elif hasattr(obj, "to_prim_func"):  # te.create_schedule(...); its .func is unscheduled
        if args is None:
            raise MLCTypeError(
                "building a te schedule needs the tensors that become the function's "
                "arguments: mlc.build(s, [A, B, C])"
            )
        func = obj.to_prim_func(list(args))
    elif isinstance(getattr(obj, "func", None), PrimFunc):  # tir.Schedule (of an IRModule too)
        func = obj.func
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


def lower(
    obj: Any,
    args: Sequence[Any] | None = None,
    name: str | None = None,
    simple_mode: bool = False,
    target: str | dict[str, Any] | Target | None = None,
) -> PrimFunc:
    """The lowered loop program: flat buffers, loops and vectors, no blocks. Print it.

    With a ``target`` (``"cuda-sim"``, say) the target's own passes run too, so you see the
    program as that target's codegen receives it. ``simple_mode`` is accepted for TVM's call
    shape; mlc always prints the simple form."""
    del simple_mode
    return target_lower(to_prim_func(obj, args, name), target)


def build(
    obj: Any,
    args: Sequence[Any] | None = None,
    target: str | dict[str, Any] | Target | None = None,
    name: str | None = None,
    bounds_check: bool | None = None,
    allow_calls: bool = True,
) -> Any:
    """Lower and compile; returns a Module (:class:`mlc.runtime.Module` for the CPU) that you
    call with numpy arrays.

    ``target`` (default: the one of an enclosing ``with mlc.target.Target(...):``, else
    ``"llvm"``) is ``"llvm"`` (this CPU), ``"llvm -mcpu=..."``, ``{"kind": "llvm", "mcpu":
    ...}`` or ``"c"`` (the same machine code, plus C source in ``get_source("c")``);
    ``"cuda"`` (CUDA C in ``get_source("cuda")``, run on a GPU) or ``"cuda-sim"`` (the same
    kernels run on the CPU with GPU semantics) for schedules bound to blockIdx/threadIdx.
    The target's back end (:mod:`mlc.target`) decides the passes, the codegen and the Module.

    Compiled code never traps: an integer division by zero raises
    :class:`~mlc.errors.IntegerDivisionError` from the call, and indices that cannot be
    checked before the run (read from data, over symbolic sizes, under conditions) are checked
    while it runs (:class:`~mlc.errors.IndexOutOfBoundsError`). ``bounds_check=False`` (or
    ``MLC_BOUNDS_CHECK=0``) leaves the index checks out, for experts timing a kernel.

    ``allow_calls=False`` refuses a program that calls out of itself (``call_extern`` of a
    C function, ``call_packed``): the compiled module may then call only the math functions
    of the intrinsic table and mlc's runtime, else :class:`~mlc.errors.ForbiddenCallError`
    names the symbol (the autograder builds a student's exported program so; see
    :mod:`mlc.target.llvm.extern`). It is checked where LLVM compiles for this CPU
    (``"llvm"``, ``"c"``, and ``"cuda-sim"``, whose kernels run as CPU loops).
    """
    from mlc.target.llvm.extern import calls_allowed

    if not allow_calls and parse_target(target).kind not in ("llvm", "c", "cuda-sim"):
        raise CodegenError(f"allow_calls=False is checked where LLVM compiles for this CPU "
                           f"(llvm, c, cuda-sim) only; the target is {parse_target(target).kind}")
    if hasattr(getattr(obj, "mod", None), "__mlc_build__"):  # tir.Schedule(MyModule)
        obj = obj.mod
    with calls_allowed(False if not allow_calls else None):
        if hasattr(obj, "__mlc_build__"):  # an IRModule (mlc.script): ["main"], ["mm_relu"]
            return obj.__mlc_build__(parse_target(target))
        with config.bounds_checks(bounds_check):
            return target_build(to_prim_func(obj, args, name), target)
