"""``Module``: a compiled function you call with numpy arrays.

    f = mlc.build(s, [A, B, C], name="add")
    f(a, b, c)                       # checks the arrays, then one native call; c is written
    f.get_source("ll")               # the optimised LLVM IR ("ll-unopt", "asm", "c")
    f.time_evaluator(number=10)(a, b, c).mean

A target builds one (:func:`mlc.target.llvm.build.compile_lowered` for the CPU); ``mlc.build``
lowers first.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

from mlc.errors import ArgumentError, ArgumentTypeError, CodegenError, MLCTypeError, TargetError
from mlc.runtime import checks, interrupt, jit, parallel
from mlc.runtime.args import SCALAR_CTYPES, ArgumentChecker
from mlc.runtime.timer import TimeResult, measure
from mlc.tir.expr import Call
from mlc.tir.functor import contains
from mlc.tir.stmt import PrimFunc

SOURCE_FORMATS = ("ll", "ll-unopt", "asm", "c")


def calls_packed(func: PrimFunc) -> bool:
    """Does ``func`` call a packed function (``tir.call_packed``)?"""
    return contains(func.body, lambda n: isinstance(n, Call) and n.op == "call_packed")


MAX_NATIVE_ARGS = 1024  # what ctypes.CFUNCTYPE accepts


def _refuse_to_run(target: object, why: str, args: Any) -> list[int]:
    raise TargetError(
        f"this module was built for {target} and cannot run here: {why}; running it could "
        "end the process (an illegal instruction). Its code is there to read (get_source('ll'), "
        "get_source('asm')); build for target='llvm' to run on this machine"
    )


class Module:
    """A function compiled for the CPU. Call it with one numpy array per parameter buffer
    and a number per scalar parameter, in the order of the build's argument list."""

    def __init__(
        self,
        func: PrimFunc,
        entry_name: str,
        target: jit.Target,
        ir_unoptimized: str,
        compiled: jit.Compiled,
        c_source: str | None = None,
        check_sites: tuple[tuple[str, str, str], ...] = (),
        threads: int = 0,
        cannot_run: str | None = None,
    ) -> None:
        """``threads``: the team size of the parallel loops the code runs on libgomp (0:
        none). ``cannot_run``: why the code must not run on this CPU (built for another:
        it would die of an illegal instruction), or None."""
        self.func = func
        self.entry_name = entry_name
        self.target = target
        self._ir = ir_unoptimized
        self._compiled = compiled  # keeps the machine code alive
        self._c_source = c_source
        self._asm: str | None = None
        self._checker = ArgumentChecker(func)
        native_types = (
            [ctypes.c_void_p] * len(func.params)
            + [ctypes.c_int64] * len(self._checker.size_vars)
            + [SCALAR_CTYPES[v.dtype] for v in func.scalar_args]
        )
        if len(native_types) > MAX_NATIVE_ARGS:  # ctypes' own limit: its ArgumentError
            raise CodegenError(
                f"{func.name} takes {len(native_types)} native arguments (arrays, sizes and "
                f"scalars); a compiled function can be called with at most {MAX_NATIVE_ARGS}. "
                "Pass fewer, larger arrays (e.g. np.stack the inputs into one)"
            )
        self._cfunc: Callable[..., None] = ctypes.CFUNCTYPE(None, *native_types)(
            compiled.address)
        if threads > 1:
            self._cfunc = parallel.on_own_cpus(self._cfunc, threads)
        # Jupyter's interrupt stops a long call (mlc.runtime.interrupt); a forked child warns
        self._outputs = interrupt.output_positions(func)
        self._cfunc = interrupt.guard(
            self._cfunc, interrupt.flag_address(compiled.engine), entry_name,
            always_arm=bool(func.size_vars or func.scalar_args),
            uses_threads="GOMP_parallel" in ir_unoptimized)
        self._native_args = self._checker._fast
        if cannot_run is not None:
            self._native_args = functools.partial(_refuse_to_run, target, cannot_run)
        self.check_sites = check_sites
        self._errors = checks.ErrorRecord(
            compiled.engine, check_sites, entry_name, packed=calls_packed(func)
        )

    @property
    def has_checks(self) -> bool:
        """Does the compiled code check divisors and indices at run time?"""
        return bool(self.check_sites)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        """Run the function on numpy arrays; outputs are written in place. A run-time check
        that fails (an integer division by zero, an index out of range) raises a
        :class:`~mlc.errors.RuntimeCheckError` after the call."""
        if kwargs:
            self._refuse_keywords(kwargs)
        native = self._native_args(args)
        try:
            self._errors.run(self._cfunc, native)
        except KeyboardInterrupt:
            interrupt.invalidate(args[k] for k in self._outputs)
            raise

    def _refuse_keywords(self, kwargs: dict[str, Any]) -> None:
        names = ", ".join(f"{k}=" for k in kwargs)
        raise ArgumentTypeError(
            f"{self.entry_name}() takes its arguments by position, in the order of the build's "
            f"argument list ({self.signature()}); got the keyword(s) {names}. Call "
            f"f(a, b, ...) without names"
        )

    def bind(self, *args: Any, **kwargs: Any) -> Callable[[], None]:
        """Check ``args`` once and return a function of no arguments that runs on them: the
        leanest call for arrays used again and again (a graph executor's buffers never
        move). The returned function keeps the arrays alive; do not resize them."""
        if kwargs:
            self._refuse_keywords(kwargs)
        run = self._errors.wrap(functools.partial(self._cfunc, *self._native_args(args)))
        name = self.entry_name

        def call(*extra: Any, **keywords: Any) -> None:
            if extra or keywords:  # ctypes would pass them on to the machine code
                raise ArgumentTypeError(
                    f"the function bind() returned runs {name} on the arrays it was given and "
                    f"takes no arguments (got {len(extra) + len(keywords)}); call it as "
                    "run(), or call the module itself with new arrays"
                )
            try:
                run()
            except KeyboardInterrupt:
                interrupt.invalidate(args[k] for k in outputs)
                raise

        outputs = self._outputs
        call.arrays = args  # type: ignore[attr-defined]  # keeps the memory alive
        call.module = self  # type: ignore[attr-defined]  # and the machine code it jumps to
        return call

    def time_evaluator(
        self,
        func_name: str | None = None,
        dev: Any = None,
        number: int = 10,
        repeat: int = 3,
        min_repeat_ms: float = 0,
    ) -> Callable[..., TimeResult]:
        """A function that takes the same arrays and returns a :class:`TimeResult`
        (``.mean .median .min .max .std .results``, seconds per call).

        TVM's call shape works too: ``f.time_evaluator(f.entry_name, dev, number=10)``
        (the device is the CPU this module runs on, whatever ``dev`` says). Every Module
        kind times through this method; what one call is, is its ``_evaluator``."""
        if func_name is not None and func_name != self.entry_name:
            raise ArgumentError(
                f"this module's function is {self.entry_name!r}, not {func_name!r}; call "
                "f.time_evaluator(number=..., repeat=...) or pass f.entry_name"
            )
        return self._evaluator(number, repeat, min_repeat_ms)

    def _evaluator(
        self, number: int, repeat: int, min_repeat_ms: float
    ) -> Callable[..., TimeResult]:
        """The timing function of :meth:`time_evaluator`: here the native call, its
        arguments converted once."""

        def evaluate(*args: Any, **kwargs: Any) -> TimeResult:
            if kwargs:
                self._refuse_keywords(kwargs)
            call = self._errors.wrap(functools.partial(self._cfunc, *self._native_args(args)))
            return measure(call, number, repeat, min_repeat_ms)

        return evaluate

    def get_source(self, fmt: str = "") -> str:
        """The code: ``"ll"`` optimised LLVM IR, ``"ll-unopt"`` as the backend wrote it,
        ``"asm"`` machine code, ``"c"`` C source (target ``"c"`` only). The default is
        ``"c"`` for a C target, else ``"ll"``."""
        fmt = fmt or ("c" if self._c_source is not None else "ll")
        if fmt == "ll":
            return self._compiled.optimized_ir
        if fmt == "ll-unopt":
            return self._ir
        if fmt == "asm":
            return self._assembly()
        if fmt == "c":
            if self._c_source is None:
                raise ArgumentError(
                    'this module has no C source; build it with target="c" to see C'
                )
            return self._c_source
        raise ArgumentError(f"unknown source format {fmt!r}; use one of {SOURCE_FORMATS}")

    def _assembly(self) -> str:
        if self._asm is None:
            self._asm = jit.assembly(self._compiled.optimized_ir, self.target)
        return self._asm

    # -- leaving the process (mlc.runtime.export) --------------------------------------------
    def exportable(self) -> Any:
        """What export needs: the program's signature, its LLVM IR and its target."""
        from mlc.errors import ExportError
        from mlc.runtime.export import Exportable

        if getattr(self, "_ir", None) is None:
            raise ExportError(
                f"{self.entry_name} was built for {self.target}, whose code is not a CPU "
                "function: only CPU modules (target 'llvm', 'c', or -mtriple=...) export as "
                "a library. A GPU module's kernels are its CUDA source (get_source('cuda'))")
        if not self._ir:
            raise ExportError(f"{self.entry_name} was loaded from a library and has no IR to "
                              "export again; copy the library file instead")
        return Exportable(self.func, self.entry_name, self._ir, self.target, self.check_sites)

    def save(self, path: Any, fmt: str = "") -> None:
        """TVM's ``lib.save("myfunc.o")``: an object file (``.o``), assembly (``.s``), LLVM
        IR (``.ll``) or a shared library (``.so``) of this module, for its target triple."""
        from mlc.runtime import export

        export.save(self.exportable(), path, fmt)

    def export_library(self, path: Any, cc: str | None = None) -> None:
        """Write a shared library that :func:`mlc.runtime.load_module` reads back and a C
        program links (``include/mlc_runtime.h``); linked by the system's ``cc``."""
        from mlc.runtime import export

        export.export_library(self.exportable(), path, cc)

    def signature(self) -> str:
        return self._checker.signature()

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise MLCTypeError(
            f"a Module ({self.entry_name}) cannot be pickled: its machine code lives in this "
            "process's memory. Pickle the program instead (mlc.lower(...) gives a PrimFunc) "
            "and build it again where it is needed"
        )

    def __copy__(self) -> Module:
        return self  # compiled code does not change: a copy would be the same function

    def __deepcopy__(self, memo: dict[int, Any]) -> Module:
        return self

    def __repr__(self) -> str:
        return f"Module({self.entry_name}({self.signature()}), target={str(self.target)!r})"
