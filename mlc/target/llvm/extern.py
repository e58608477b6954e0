"""Calls out of the program: packed functions (Python) and C functions, in LLVM IR.

``call_packed("f", A, n, 0.5)`` becomes one call of the runtime's trampoline::

    @sig = private constant [..] c"f|b:float32:2|i|f\\00"     ; name, then one field per arg
    %values = alloca [5 x i64]                                  ; A's address, A's two sizes,
    store ...                                                   ; n, the bits of 0.5
    %status = call i32 @__mlc_call_packed(i8* @sig, i64* %values)

(see :mod:`mlc.runtime.registry` for the other side). The name must be registered when the
module is built, and the function must take that many arguments.

``call_pure_extern("float32", "expf", x)`` declares ``float @expf(float)`` and calls it, one
lane at a time for vectors; the symbol must exist in the process (libm is loaded), which
:func:`mlc.target.llvm.build.compile_lowered` checks before the JIT links the module: an
unresolved symbol inside MCJIT would abort the process.

**Builds that may not call out.** ``mlc.build(func, allow_calls=False)`` (what the autograder
does with a student's exported program) checks the module *as compiled*: every function it
declares (not defined in it) must be a math function of the intrinsic table (``expf``,
``tanh``...), an LLVM intrinsic the code generator chose, or one of mlc's runtime helpers
(:data:`RUNTIME_SYMBOLS`: ``aligned_alloc``/``free`` for buffers, libgomp for ``parallel``);
a name the program asked for itself (``call_extern``) must be a math function. Anything else
(``system``, ``open``, a packed function) is a :class:`~mlc.errors.ForbiddenCallError`
naming the symbol, raised before the JIT links anything. Checking the compiled module rather
than the program's Calls means a call no pass or visitor saw (hidden in a buffer's shape,
made by a pass) is caught too. A student's own notebook keeps ``allow_calls=True``.

A program named like a function the compiled code calls (``exp``, ``free``, ``memset``)
is compiled under another symbol (:func:`entry_name`), so that its definition never stands
in for the C library's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from llvmlite import ir

from mlc.errors import CodegenError, ForbiddenCallError
from mlc.runtime import registry
from mlc.target.llvm import types as ty
from mlc.tir import dtype as dt
from mlc.tir.call import buffer_of
from mlc.tir.expr import Call, PrimExpr, StringImm, Var


class ExternCallEmitter:
    """Mixin: ``packed_call(e)`` and ``extern_call(e)``. Needs the ExprEmitter's ``b``,
    ``emit``, ``cast``, ``declare``, ``module`` and the code generator's ``_alloca_b``."""

    b: ir.IRBuilder
    module: ir.Module
    _alloca_b: ir.IRBuilder

    if TYPE_CHECKING:  # provided by ExprEmitter / CodeGenLLVM

        def emit(self, e: PrimExpr) -> ir.Value: ...
        def emit_Var(self, e: Var) -> ir.Value: ...
        def cast(self, v: ir.Value, src: str, dst: str) -> ir.Value: ...
        def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function: ...

    extern_symbols: set[str]

    def packed_call(self, e: Call) -> ir.Value:
        name = _name_of(e)
        registry.check_call(name, len(e.args) - 1)
        fields = [name]
        slots: list[ir.Value] = []
        for k, a in enumerate(e.args[1:], start=1):
            buf = buffer_of(a)
            if buf is not None:
                sizes = a.args[1:]  # type: ignore[attr-defined]  # a buffer_arg call
                fields.append(f"b:{dt.element(buf.dtype)}:{len(sizes)}")
                slots.append(self.b.ptrtoint(self.emit_Var(buf.data), ty.I64))
                slots += [self.cast(self.emit(s), s.dtype, "int64") for s in sizes]
            elif dt.lanes(a.dtype) != 1 or a.dtype == "handle":
                raise CodegenError(
                    f"call_packed({name!r}): argument {k} `{a}` is a {a.dtype}; packed "
                    "functions take buffers and scalars"
                )
            elif dt.is_float(a.dtype):
                fields.append("f")
                slots.append(self.b.bitcast(self.cast(self.emit(a), a.dtype, "float64"), ty.I64))
            else:
                fields.append("i")
                slots.append(self.cast(self.emit(a), a.dtype, "int64"))
        array_t = ir.ArrayType(ty.I64, max(1, len(slots)))
        values = self._alloca_b.alloca(array_t, name="packed_args")
        for k, v in enumerate(slots):
            ptr = self.b.gep(values, [ir.Constant(ty.I32, 0), ir.Constant(ty.I32, k)])
            self.b.store(v, ptr)
        first = self.b.gep(values, [ir.Constant(ty.I32, 0), ir.Constant(ty.I32, 0)])
        fnty = ir.FunctionType(ty.I32, [ty.I8P, ty.I64.as_pointer()])
        trampoline = self.declare(registry.install(), fnty)
        return self.b.call(trampoline, [self._signature("|".join(fields)), first])

    def _signature(self, text: str) -> ir.Value:
        data = bytearray(text.encode() + b"\0")
        t = ir.ArrayType(ty.I8, len(data))
        g = ir.GlobalVariable(self.module, t, name=self.module.get_unique_name("packed_sig"))
        g.global_constant = True
        g.linkage = "private"
        g.initializer = ir.Constant(t, data)
        return self.b.bitcast(g, ty.I8P)

    def extern_call(self, e: Call) -> ir.Value:
        name = _name_of(e)
        args = [self.emit(a) for a in e.args[1:]]
        lanes = max([ty.lanes_of(a.type) for a in args] + [dt.lanes(e.dtype)])
        scalar_dtypes = [dt.element(a.dtype) for a in e.args[1:]]
        fnty = ir.FunctionType(
            ty.value_type(dt.element(e.dtype)), [ty.value_type(d) for d in scalar_dtypes]
        )
        existing = self.module.globals.get(name)
        if existing is not None and existing.function_type != fnty:
            raise CodegenError(
                f"{e.op}({name!r}) is called with types {fnty} here but {existing.function_type}"
                " elsewhere in the program (or the name is taken); one C function has one type"
            )
        _check_libm(e, name)
        fn = self.declare(name, fnty)
        self.extern_symbols.add(name)
        if lanes == 1:
            return self.b.call(fn, args)
        result: ir.Value = ir.Constant(ty.value_type(dt.with_lanes(e.dtype, lanes)), None)
        for k in range(lanes):  # a vector call: one call per lane
            lane = ir.Constant(ty.I32, k)
            lane_args = [
                self.b.extract_element(a, lane) if ty.is_vector(a.type) else a for a in args
            ]
            result = self.b.insert_element(result, self.b.call(fn, lane_args), lane)
        return result


def _name_of(e: Call) -> str:
    name = e.args[0] if e.args else None
    if not isinstance(name, StringImm):
        raise CodegenError(f"{e.op} needs the function's name as its first argument, got {name}")
    return name.value


def _libm_types() -> dict[str, str]:
    """libm's math functions of the intrinsic table: ``expf`` takes and returns float32,
    ``exp`` float64."""
    from mlc.tir import intrin

    found = {}
    for n, row in intrin.INTRINSICS.items():
        if row.c.startswith(n + "{f}("):
            found[n + "f"], found[n] = "float32", "float64"
    return found


def _check_libm(e: Call, name: str) -> None:
    """A libm function called with the wrong types reads garbage registers: refuse it."""
    want = _libm_types().get(name)
    if want is None:
        return
    got = [dt.element(e.dtype)] + [dt.element(a.dtype) for a in e.args[1:]]
    if any(g != want for g in got):
        args = ", ".join(dt.element(a.dtype) for a in e.args[1:])
        raise CodegenError(
            f"{e.op}({e.dtype!r}, {name!r}, ...) with arguments ({args}): libm's {name} takes "
            f"and returns {want}; cast the arguments (x.astype({want!r})) and use dtype "
            f"{want!r}"
        )


# mlc's own runtime helpers the code generator declares (never a name the program chose)
RUNTIME_SYMBOLS = frozenset({
    "aligned_alloc", "free",  # heap buffers and kept workspace blocks
    "GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads",  # parallel loops
    "memset", "memcpy", "memmove",  # what LLVM may turn a fill or a copy loop into
})

def entry_name(name: str) -> str:
    """The compiled function's symbol for a program named ``name``: ``name`` itself, unless
    the compiled code may call a function of that name (``free`` for a heap buffer,
    ``expf``/``exp`` for ``te.exp``, ``memset`` for a fill loop, mlc's own ``__mlc_*``),
    where the module's own definition would stand in for the C library's (the build failed
    with IndexError/TypeError, or a float64 ``exp`` called itself): then ``name_kernel``."""
    reserved = (name in RUNTIME_SYMBOLS or name in _libm_types() or name == registry.SYMBOL
                or name.startswith(("__mlc", "llvm.", "GOMP_", "omp_")))
    return f"{name}_kernel" if reserved else name


_ALLOW_CALLS: ContextVar[bool] = ContextVar("mlc_allow_calls", default=True)


@contextmanager
def calls_allowed(allow: bool | None) -> Iterator[None]:
    """Builds for the CPU inside the block may call out (``call_extern``, ``call_packed``)
    only when ``allow`` is true; None keeps what the enclosing block decided."""
    if allow is None:
        yield
        return
    token = _ALLOW_CALLS.set(bool(allow))
    try:
        yield
    finally:
        _ALLOW_CALLS.reset(token)


def may_call_out() -> bool:
    """Whether builds here may call out (see :func:`calls_allowed`)."""
    return _ALLOW_CALLS.get()


def forbidden_symbols(ir_text: str, requested: Iterable[str]) -> list[str]:
    """The symbols the module ``ir_text`` would call and may not, when calls are refused.

    ``requested``: the names the program itself asked for (``call_extern`` /
    ``call_pure_extern``); each must be a math function. Every function the module declares
    must be a math function, an ``llvm.*`` intrinsic that the code generator chose, or a
    runtime helper; a global variable from outside the module (``environ``) is refused too.
    """
    from mlc.runtime import jit

    math = set(_libm_types())
    requested = set(requested)
    found = sorted(name for name in requested if name not in math)
    mod = jit.parse(ir_text)
    for fn in mod.functions:
        name = fn.name
        if not fn.is_declaration or name in found:
            continue
        if name in math or (name in RUNTIME_SYMBOLS or name.startswith("llvm.")) \
                and name not in requested:
            continue
        found.append(name)
    found += [g.name for g in mod.global_variables if g.is_declaration and g.name not in found]
    return found


def check_calls(ir_text: str, requested: Iterable[str]) -> None:
    """Raise :class:`~mlc.errors.ForbiddenCallError` naming what ``ir_text`` may not call
    (:func:`forbidden_symbols`); nothing when every call is allowed."""
    found = forbidden_symbols(ir_text, requested)
    if not found:
        return
    names = ", ".join(
        "a packed function (call_packed)" if n == registry.SYMBOL else repr(n) for n in found)
    raise ForbiddenCallError(
        f"the compiled program calls {names}, which a build with allow_calls=False refuses "
        "(the autograder builds exported programs so): such a program may call only the math "
        "functions of the intrinsic table (te.exp, te.tanh...; expf, tanhf) and mlc's "
        "runtime; compute the answer with the program's own loops"
    )
