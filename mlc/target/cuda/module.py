"""GPU modules: ``mlc.build(..., target="cuda")`` and ``target="cuda-sim"``.

::

    f = mlc.build(s, [A, B, C], target="cuda-sim")   # runs on the CPU, GPU semantics
    f(a, b, c)
    print(f.get_source("cuda"))                      # the CUDA C of every kernel
    f.kernels[0].grid, f.kernels[0].threads          # the launch configuration
    mlc.build(s, [A, B, C], target="cuda").get_source("ptx")   # needs NVRTC

A ``"cuda"`` module runs on an NVIDIA GPU when the driver is present (arrays are copied to
the device and back on every call); ``"cuda-sim"`` compiles the simulation of the same
kernels (:mod:`mlc.target.cuda_sim`) with the LLVM backend. :mod:`mlc.target.cuda` builds it.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from mlc.errors import ArgumentError
from mlc.runtime import cuda_driver
from mlc.runtime.args import SCALAR_CTYPES, ArgumentChecker
from mlc.runtime.module import Module
from mlc.runtime.timer import TimeResult, measure
from mlc.target.common import c_name
from mlc.target.cuda import nvrtc as cuda_nvrtc
from mlc.target.cuda.codegen import CUDASource
from mlc.target.gpu.checks import launch_limit_message
from mlc.target.gpu.split_host_device import BLOCK_AXES, THREAD_AXES
from mlc.target.target import Target
from mlc.tir import dtype as dt
from mlc.tir.arith import evaluate_known
from mlc.tir.expr import IntImm, PrimExpr
from mlc.tir.stmt import Allocate, For, KernelLaunch, LetStmt, PrimFunc, SeqStmt, Stmt

SOURCE_FORMATS = ("cuda", "ptx", "ll", "ll-unopt", "asm")


class CUDAModule(Module):
    """A function compiled for the GPU (``"cuda"``) or for its simulation (``"cuda-sim"``)."""

    def __init__(self, func: PrimFunc, target: Target, source: CUDASource,
                 sim: Module | None) -> None:
        self.func = func
        self.entry_name = func.name
        self.target = target
        self._arch = target.arch
        self.source = source
        self._sim = sim
        self._ptx: str | None = None
        self._checker = ArgumentChecker(func)
        self._gpu_functions: dict[str, Any] | None = None
        self._error_flag: Any = None  # the device's mlc_error record (device_errors)
        self._symbolic_grid = any(not isinstance(e, IntImm) for k in source.kernels
                                  for _, e in k.grid_extents)
        self._calls: Any = None
        if sim is not None and source.kernels:
            from mlc.target.cuda_sim.call_checks import CallChecks

            self._calls = CallChecks(func)

    # cuda-sim checks its calls (mlc.target.cuda_sim.call_checks): which ones, how long each
    # may take, and what the latest one ran
    @property
    def check_calls(self) -> str:
        """cuda-sim: which calls are checked (on copies of the arrays) before they run, so
        that a race or a bad index is an error, not wrong numbers: ``"auto"`` (the first
        call, and any call whose verdict could differ: other shapes, other data where data
        decides addresses), ``"every"``, ``"first"`` or ``"never"``."""
        return self._calls.mode if self._calls is not None else "never"

    @check_calls.setter
    def check_calls(self, mode: str) -> None:
        if self._calls is not None:
            self._calls.mode = mode

    @property
    def check_budget(self) -> float:
        """cuda-sim: CPU seconds a call's check may take (3 by default; ``float("inf")``:
        no limit). A check of every block estimated past twice that runs a sample of the
        blocks instead; any check stops at the budget; either way a warning says what ran
        (``last_check``)."""
        return self._calls.budget if self._calls is not None else 0.0

    @check_budget.setter
    def check_budget(self, seconds: float) -> None:
        if self._calls is not None:
            self._calls.budget = seconds

    @property
    def last_check(self) -> Any:
        """cuda-sim: the report of the latest call's check (None before any): the blocks it
        ran per kernel, ``complete``, ``sampled``, ``seconds``."""
        return self._calls.last if self._calls is not None else None

    @property
    def check_on_first_call(self) -> bool:
        """True while the first call's check is still to come; ``False`` turns the checks
        of calls off (``check_calls = "never"``)."""
        return self._calls is not None and self._calls.mode != "never" and \
            self._calls.count == 0

    @check_on_first_call.setter
    def check_on_first_call(self, value: bool) -> None:
        if self._calls is not None:
            self._calls.mode = "auto" if value else "never"

    @property
    def kernels(self) -> tuple[KernelLaunch, ...]:
        """The kernels, in launch order, with their ``grid`` and ``threads``."""
        return self.source.kernels

    def __call__(self, *args: Any) -> None:
        if self._sim is not None:
            if self._symbolic_grid:
                native = self._checker.native_args(args)
                values = native[len(self.func.params):]
                env = dict(zip((id(v) for v in (*self.func.size_vars,
                                                *self.func.scalar_args)), values))
                for k in self.kernels:
                    check_grid(k, env)
            if self._calls is not None and self._calls.mode != "never":
                self._checker.native_args(args)  # a wrong call is an ArgumentError first
                self._calls.before_call(args)
            self._sim(*args)
        else:
            self._run_gpu(args)

    def check(self, *args: Any, blocks: int | None = None) -> Any:
        """Run the kernels on ``args`` in cuda-sim's checking interpreter: raises a
        :class:`~mlc.errors.RaceError`, :class:`~mlc.errors.UninitializedReadError`,
        :class:`~mlc.errors.GPUIndexError` or :class:`~mlc.errors.BarrierDivergenceError`
        naming the threads and the line, else returns a report. See
        :func:`mlc.target.cuda_sim.check` (``blocks=n`` checks n blocks of each kernel)."""
        from mlc.target.cuda_sim.checks import check

        return check(self, *args, blocks=blocks)

    def bind(self, *args: Any) -> Callable[[], None]:
        """A function of no arguments that runs on ``args`` (checked once for cuda-sim)."""
        if self._sim is not None:
            return self._sim.bind(*args)
        return functools.partial(self._run_gpu, args)

    def _evaluator(
        self, number: int, repeat: int, min_repeat_ms: float
    ) -> Callable[..., TimeResult]:
        """For :meth:`Module.time_evaluator`. On a GPU the arrays are copied to the device once,
        before timing: a result is the time of the kernels alone."""
        if self._sim is not None:
            return self._sim.time_evaluator(
                number=number, repeat=repeat, min_repeat_ms=min_repeat_ms
            )

        def evaluate(*args: Any) -> TimeResult:
            return self._time_gpu(args, number, repeat, min_repeat_ms)

        return evaluate

    def get_source(self, fmt: str = "") -> str:
        """``"cuda"`` (the default) CUDA C; ``"ptx"`` PTX from NVRTC; for ``cuda-sim`` also
        the simulation's ``"ll"``, ``"ll-unopt"`` and ``"asm"``."""
        fmt = fmt or "cuda"
        if fmt == "cuda":
            return self.source.text
        if fmt == "ptx":
            return self.ptx()
        if fmt in ("ll", "ll-unopt", "asm") and self._sim is not None:
            return self._sim.get_source(fmt)
        raise ArgumentError(f"unknown source format {fmt!r}; use one of {SOURCE_FORMATS}")

    def ptx(self, arch: str | None = None) -> str:
        """The PTX of all kernels, compiled by NVRTC for ``arch`` (the target's ``-arch``,
        else the GPU's, else ``compute_80``)."""
        if arch is not None:
            return cuda_nvrtc.compile_to_ptx(self.source.text, arch)
        if self._ptx is None:
            arch = self._arch
            if arch is None and cuda_driver.available():
                arch = cuda_driver.context().arch()
            self._ptx = cuda_nvrtc.compile_to_ptx(self.source.text, arch)
        return self._ptx

    # -- running on a GPU ---------------------------------------------------------------------
    def _run_gpu(self, args: Any) -> None:
        with _DeviceCall(self, args) as call:
            call.launch()

    def _time_gpu(self, args: Any, number: int, repeat: int,
                  min_repeat_ms: float) -> TimeResult:
        """Arrays are copied to the GPU once; each timed call launches the kernels and waits
        for them (as TVM times arrays already on the device). The results are copied back."""
        with _DeviceCall(self, args) as call:
            def run() -> None:
                call.launch()
                call.ctx.synchronize()
            return measure(run, number, repeat, min_repeat_ms)

    def _functions(self, ctx: cuda_driver.Context) -> dict[str, Any]:
        if self._gpu_functions is None:
            from mlc.target.cuda import device_errors

            self._gpu_functions, self._error_flag = device_errors.load(
                ctx, self.ptx(), [c_name(k.name) for k in self.kernels],
                bool(self.source.checks))
        return self._gpu_functions

    def signature(self) -> str:
        return self._checker.signature()

    def __repr__(self) -> str:
        return f"CUDAModule({self.entry_name}({self.signature()}), target={str(self.target)!r})"


def _c_scalar(dtype: str, value: int | float) -> Any:
    """A kernel's scalar argument as the C type its parameter has."""
    return SCALAR_CTYPES[dt.element(dtype)](value)


def evaluate(e: PrimExpr | int, env: dict[int, int]) -> int:
    """The value of a launch extent or a host loop's bound (an integer expression of the
    size variables and the host loops' variables)."""
    value = evaluate_known(e, env)
    if value is None:
        raise ArgumentError(f"cannot evaluate the launch extent {e}")
    return int(value)


def check_grid(k: KernelLaunch, env: dict[int, int]) -> None:
    """An :class:`~mlc.errors.ArgumentError` when the sizes of this call give ``k`` more
    blocks along an axis than a GPU launches (65535 along y: ``blockIdx.y`` bound to a loop
    over ``n`` rows, called with n = 70000). A grid extent that reads a host loop's variable
    is checked at its launch."""
    for tag, extent in k.grid_extents:
        if isinstance(extent, IntImm):
            continue  # checked when the kernel was made
        value = evaluate_known(extent, env)
        if value is None:
            continue
        sizes = ", ".join(f"{v.name}={env[id(v)]}" for v in k.size_vars if id(v) in env)
        problem = launch_limit_message(k.name, tag, int(value),
                                       f" ({extent} with {sizes})" if sizes else "")
        if problem is not None:
            raise ArgumentError(problem)


class _DeviceCall:
    """One call's arrays on the GPU: copied there on entry, launched any number of times,
    copied back (writeable arrays only) and freed on exit."""

    def __init__(self, module: CUDAModule, args: Any) -> None:
        self.module = module
        self.ctx = cuda_driver.context()
        checker = module._checker
        native = checker.native_args(args)
        func = module.func
        values = native[len(func.params):]  # the sizes, then the scalars passed by value
        self.env: dict[int, Any] = {
            id(v): x for v, x in zip((*func.size_vars, *func.scalar_args), values)
        }
        self.arrays = [np.asarray(args[k]) for k in checker.buffer_positions]
        self.device: dict[int, Any] = {}
        self.grids: dict[str, list[int]] = {}  # each kernel's last grid, for error messages

    def __enter__(self) -> _DeviceCall:
        ctx, func = self.ctx, self.module.func
        self.functions = self.module._functions(ctx)
        try:
            for buf, arr in zip(func.params, self.arrays):
                self.device[id(buf.data)] = ptr = ctx.alloc(arr.nbytes)
                ctx.to_device(ptr, arr)
            for buf in self.module.source.intermediates:
                count = 1
                for extent in buf.shape:
                    count *= evaluate(extent, self.env)
                nbytes = count * dt.nbytes(dt.element(buf.dtype))
                self.device[id(buf.data)] = ctx.alloc(nbytes)
            if self.module._error_flag is not None:
                self.module._error_flag.clear()
        except BaseException:
            self._free()
            raise
        return self

    def launch(self) -> None:
        """Run the host program: its kernels in order, those inside a host loop (the time
        loop of a scan) once per step, with the loop variable as an argument."""
        self._host(self.module.func.body, dict(self.env))

    def _host(self, s: Stmt, env: dict[int, int]) -> None:
        if isinstance(s, SeqStmt):
            for child in s.seq:
                self._host(child, env)
        elif isinstance(s, Allocate):  # a global intermediate, allocated in __enter__
            self._host(s.body, env)
        elif isinstance(s, LetStmt):
            self._host(s.body, {**env, id(s.var): evaluate(s.value, env)})
        elif isinstance(s, For):
            lo = evaluate(s.min, env)
            for step in range(lo, lo + evaluate(s.extent, env)):
                self._host(s.body, {**env, id(s.loop_var): step})
        elif isinstance(s, KernelLaunch):
            self._launch(s, env)

    def _launch(self, k: KernelLaunch, env: dict[int, int]) -> None:
        check_grid(k, env)
        grid = [evaluate(k.grid[t], env) if t in k.grid else 1 for t in BLOCK_AXES]
        block = [k.threads.get(t, 1) for t in THREAD_AXES]
        kargs: list[Any] = [ctypes.c_uint64(self.device[id(p)].value) for p in k.pointers]
        kargs += [_c_scalar(v.dtype, env[id(v)]) for v in k.size_vars]
        if min(grid) > 0:
            self.grids[c_name(k.name)] = grid
            self.ctx.launch(self.functions[c_name(k.name)], grid, block, kargs)

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        try:
            if kind is None:
                self.ctx.synchronize()
                if self.module._error_flag is not None:  # an index read from data left
                    # its array: GPUIndexError (the outputs are not copied back)
                    self.module._error_flag.raise_if_set(self.module.source, self.grids)
                for buf, arr in zip(self.module.func.params, self.arrays):
                    if arr.flags.writeable:
                        self.ctx.to_host(arr, self.device[id(buf.data)])
        finally:
            self._free()

    def _free(self) -> None:
        for ptr in self.device.values():
            self.ctx.free(ptr)
        self.device.clear()
