"""The C backend: a lowered ``PrimFunc`` printed as the C a student would write.

``mlc.build(s, args, target="c").get_source()`` shows it; the module still runs the LLVM
machine code (the C is for reading, and compiles with ``gcc -O3 -fopenmp``). How the loop IR
reads in C:

=======================  =================================================================
``For`` parallel         ``#pragma omp parallel for`` on the loop
``For`` vectorized       ``#pragma omp simd``; ``unroll``: ``#pragma GCC unroll``
vector statement         a loop over the lanes: ``B[ramp(8*i, 1, 8)] = A[...] * 2`` becomes
                         ``for (int v = 0; v < 8; ++v) B[8*i + v] = A[8*i + v] * 2;``
``FloorDiv/FloorMod``    ``mlc_floordiv``/``mlc_floormod`` (C's ``/`` and ``%`` truncate)
``Allocate``             a local array, or ``aligned_alloc``/``free`` when large
=======================  =================================================================
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

from mlc.errors import CodegenError
from mlc.target.common import c_name, flat_index
from mlc.tir import dtype as dt
from mlc.tir import intrin
from mlc.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    StringImm,
    Sub,
    Var,
)
from mlc.tir.float_int import int_range
from mlc.tir.stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)

STACK_LIMIT = 64 * 1024

_PRELUDE = """\
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Python's // and % (round towards minus infinity); C's / and % truncate towards zero. */
static inline int64_t mlc_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t mlc_floormod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
/* float -> integer: toward zero, past the type's ends the end, NaN 0 (C leaves it undefined). */
static inline double mlc_sat(double x, double lo, double hi) {
  return x != x ? 0.0 : x <= lo ? lo : x >= hi ? hi : x;
}
static inline int64_t mlc_sat_i64(double x) {
  return x != x ? 0 : x <= -9223372036854775808.0 ? INT64_MIN
       : x >= 9223372036854775808.0 ? INT64_MAX : (int64_t)x;
}
static inline uint64_t mlc_sat_u64(double x) {
  return x != x || x <= 0.0 ? 0 : x >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)x;
}
"""

_BINARY = {Add: "+", Sub: "-", Mul: "*", Div: "/", Mod: "%", And: "&&", Or: "||",
           LT: "<", LE: "<=", GT: ">", GE: ">=", EQ: "==", NE: "!="}

RESERVED = frozenset("""
    auto bool break case char const continue default do double else enum extern false float for
    goto if inline int long register restrict return short signed sizeof static struct switch
    true typedef union unsigned void volatile while int8_t int16_t int32_t int64_t uint8_t
    uint16_t uint32_t uint64_t size_t blockIdx threadIdx blockDim gridDim warpSize
    mlc_floordiv mlc_floormod mlc_sat mlc_sat_i64 mlc_sat_u64
""".split())
"""Names a variable may not take in C or CUDA source (keywords, types, built-ins)."""


def c_type(dtype: str) -> str:
    """``float32`` -> ``float``, ``int8`` -> ``int8_t``, ``float16`` -> ``_Float16``."""
    e = dt.element(dtype)
    if e == "bool":
        return "bool"
    if e == "handle":
        return "void*"
    return {"float16": "_Float16", "float32": "float", "float64": "double"}.get(e, f"{e}_t")


class CodeGenC:
    """Prints one lowered PrimFunc as a C function. Use :func:`codegen_c`."""

    language: Literal["c", "cuda"] = "c"  # which form of the intrinsic table's rows to print

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = 0
        self.names: dict[int, str] = {}  # id(Var) -> its C name (made unique)
        self.taken: set[str] = set(RESERVED)  # a variable named ``int`` prints as int_1

    # -- names --------------------------------------------------------------------------------
    def name_of(self, v: Var) -> str:
        if id(v) not in self.names:
            base = c_name(v.name)
            name, k = base, 1
            while name in self.taken:
                name, k = f"{base}_{k}", k + 1
            self.taken.add(name)
            self.names[id(v)] = name
        return self.names[id(v)]

    def line(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    # -- function -----------------------------------------------------------------------------
    def function(self, func: PrimFunc, name: str) -> str:
        params = [f"{c_type(b.dtype)}* restrict {self.name_of(b.data)}" for b in func.params]
        params += [f"int64_t {self.name_of(v)}" for v in func.size_vars]
        params += [f"{c_type(v.dtype)} {self.name_of(v)}" for v in func.scalar_args]
        self.line(f"void {name}({', '.join(params)}) {{")
        self.indent += 1
        self.stmt(func.body)
        self.indent -= 1
        self.line("}")
        return _PRELUDE + "\n" + "\n".join(self.lines) + "\n"

    # -- statements ---------------------------------------------------------------------------
    def stmt(self, s: Stmt) -> None:
        method: Callable[[Stmt], None] | None = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise CodegenError(f"the C backend cannot print a {type(s).__name__} statement")
        method(s)

    def stmt_SeqStmt(self, s: SeqStmt) -> None:
        for child in s.seq:
            self.stmt(child)

    def stmt_Evaluate(self, s: Evaluate) -> None:
        if not isinstance(s.value, IntImm):
            self.line(f"{self.expr(s.value)};")

    def stmt_LetStmt(self, s: LetStmt) -> None:
        if dt.lanes(s.var.dtype) > 1:
            raise CodegenError(f"the C backend cannot print the vector variable {s.var.name}")
        self.line(f"{c_type(s.var.dtype)} {self.name_of(s.var)} = {self.expr(s.value)};")
        self.stmt(s.body)

    def stmt_IfThenElse(self, s: IfThenElse) -> None:
        self.line(f"if ({_strip(self.expr(s.condition))}) {{")
        self._block(s.then_case)
        if s.else_case is not None:
            self.line("} else {")
            self._block(s.else_case)
        self.line("}")

    def _block(self, s: Stmt) -> None:
        self.indent += 1
        self.stmt(s)
        self.indent -= 1

    def stmt_For(self, s: For) -> None:
        """``for (int32_t i = lo; i < lo + n; ++i) { ... }`` after what the loop's kind asks
        for (:meth:`loop_header`); the CUDA renderer shares this and changes the header."""
        self.loop_header(s)
        v = self.name_of(s.loop_var)
        t = self.scalar_type(s.loop_var.dtype)
        lo = self.expr(s.min)
        end = self.expr(s.extent) if _is_zero(s.min) else f"{lo} + {self.expr(s.extent)}"
        self.line(f"for ({t} {v} = {lo}; {v} < {end}; ++{v}) {{")
        self._block(s.body)
        self.line("}")

    def loop_header(self, s: For) -> None:
        """The lines before a loop: OpenMP and GCC pragmas for its kind."""
        pragma = {
            ForKind.PARALLEL: "#pragma omp parallel for schedule(static)",
            ForKind.VECTORIZED: "#pragma omp simd",
            ForKind.UNROLLED: "#pragma GCC unroll 64",
        }.get(s.kind)
        if s.kind == ForKind.THREAD_BINDING:
            self.line(f"/* bound to {s.thread_binding}; runs as a loop on the CPU */")
        if pragma:
            self.line(pragma)

    def scalar_type(self, dtype: str) -> str:
        """The C spelling of a scalar ``dtype``."""
        return c_type(dtype)

    def stmt_Allocate(self, s: Allocate) -> None:
        buf = s.buffer
        t = c_type(buf.dtype)
        name = self.name_of(buf.data)
        count = 1
        for extent in buf.shape:
            value = extent if isinstance(extent, int) else getattr(extent, "value", None)
            if not isinstance(value, int):
                count = -1
                break
            count *= value
        if 0 <= count and count * dt.nbytes(dt.element(buf.dtype)) <= STACK_LIMIT:
            self.line(f"{t} {name}[{max(count, 1)}] __attribute__((aligned(64)));")
            self.stmt(s.body)
            return
        size = " * ".join(self.expr(e) if not isinstance(e, int) else str(e) for e in buf.shape)
        nbytes = f"(({size}) * sizeof({t}) + 63) / 64 * 64"
        self.line(f"{t}* {name} = ({t}*)aligned_alloc(64, {nbytes});")
        self.stmt(s.body)
        self.line(f"free({name});")

    def stmt_BufferStore(self, s: BufferStore) -> None:
        index = flat_index(s.buffer, s.indices)
        lanes = max(dt.lanes(index.dtype), dt.lanes(s.value.dtype))
        target = self.name_of(s.buffer.data)
        if lanes == 1:
            self.line(f"{target}[{self.expr(index)}] = {self.expr(s.value)};")
            return
        lane = Var("v", "int32")
        v = self.name_of(lane)
        self.line(f"for (int32_t {v} = 0; {v} < {lanes}; ++{v}) {{  /* {lanes} lanes */")
        self.indent += 1
        self.line(f"{target}[{self.expr(index, v)}] = {self.expr(s.value, v)};")
        self.indent -= 1
        self.line("}")

    # -- expressions --------------------------------------------------------------------------
    def expr(self, e: PrimExpr | int, lane: str | None = None) -> str:
        """C text of ``e``; for a vector expression, its lane ``lane``."""
        if isinstance(e, int):
            return str(e)
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            raise CodegenError(f"the C backend cannot print a {type(e).__name__} expression")
        return str(method(e, lane))

    def expr_Var(self, e: Var, lane: str | None) -> str:
        return self.name_of(e)

    expr_SizeVar = expr_Var

    def expr_IntImm(self, e: IntImm, lane: str | None) -> str:
        if dt.is_bool(e.dtype):
            return "true" if e.value else "false"
        if dt.bits(e.dtype) == 64 and not -(2**31) <= e.value < 2**31:
            return f"INT64_C({e.value})" if not dt.is_uint(e.dtype) else f"UINT64_C({e.value})"
        return str(e.value)

    def expr_StringImm(self, e: StringImm, lane: str | None) -> str:
        return '"' + e.value.replace("\\", "\\\\").replace('"', '\\"') + '"'

    def expr_FloatImm(self, e: FloatImm, lane: str | None) -> str:
        v = e.value
        if math.isnan(v):
            text = "NAN"
        elif math.isinf(v):
            text = "INFINITY" if v > 0 else "-INFINITY"
        else:
            text = repr(float(v))
        if dt.element(e.dtype) == "float32":
            return text if not text[-1].isdigit() else text + "f"
        if dt.element(e.dtype) == "float16":
            return f"(_Float16){text}"
        return text

    def _binary(self, e: BinaryOp, lane: str | None) -> str:
        return f"({self.expr(e.a, lane)} {_BINARY[type(e)]} {self.expr(e.b, lane)})"

    expr_Add = expr_Sub = expr_Mul = expr_Div = expr_Mod = _binary
    expr_And = expr_Or = expr_LT = expr_LE = expr_GT = expr_GE = expr_EQ = expr_NE = _binary

    def expr_FloorDiv(self, e: FloorDiv, lane: str | None) -> str:
        return self._floor("mlc_floordiv", "/", e, lane)

    def expr_FloorMod(self, e: FloorMod, lane: str | None) -> str:
        return self._floor("mlc_floormod", "%", e, lane)

    def _floor(self, helper: str, op: str, e: FloorDiv | FloorMod, lane: str | None) -> str:
        a, b = self.expr(e.a, lane), self.expr(e.b, lane)
        if dt.is_uint(e.dtype):
            return f"({a} {op} {b})"
        return f"({c_type(e.dtype)}){helper}({a}, {b})"

    def expr_Min(self, e: Min, lane: str | None) -> str:
        return self._pick("<", e, lane)

    def expr_Max(self, e: Max, lane: str | None) -> str:
        return self._pick(">", e, lane)

    def _pick(self, op: str, e: Min | Max, lane: str | None) -> str:
        """``a < b ? a : b``; for floats a NaN in either operand is the answer (as numpy and
        the LLVM backend do: C's ``fmaxf`` and the plain comparison drop a NaN ``a``)."""
        a, b = self.expr(e.a, lane), self.expr(e.b, lane)
        nan = f" || ({a}) != ({a})" if dt.is_float(e.dtype) else ""
        return f"(({a}) {op} ({b}){nan} ? ({a}) : ({b}))"

    def expr_Not(self, e: Not, lane: str | None) -> str:
        return f"(!{self.expr(e.a, lane)})"

    def expr_Select(self, e: Select, lane: str | None) -> str:
        c, t, f = (self.expr(x, lane) for x in (e.condition, e.true_value, e.false_value))
        return f"({c} ? {t} : {f})"

    def expr_Let(self, e: Let, lane: str | None) -> str:
        raise CodegenError("the C backend cannot print a Let expression; use a LetStmt")

    def expr_Cast(self, e: Cast, lane: str | None) -> str:
        value = self.expr(e.value, lane)
        if dt.is_bool(e.dtype):
            return f"({value} != 0)"
        if dt.is_float(e.value.dtype) and not dt.is_float(e.dtype):
            return _saturating_cast(value, e.dtype, c_type(e.dtype))
        return f"(({c_type(e.dtype)}){value})"

    def expr_Ramp(self, e: Ramp, lane: str | None) -> str:
        if lane is None:
            raise CodegenError("a vector (Ramp) appears outside a vector statement")
        if isinstance(e.stride, IntImm) and e.stride.value == 1:
            return f"({self.expr(e.base)} + {lane})"
        return f"({self.expr(e.base)} + {lane} * {self.expr(e.stride)})"

    def expr_Broadcast(self, e: Broadcast, lane: str | None) -> str:
        return self.expr(e.value)

    def expr_BufferLoad(self, e: BufferLoad, lane: str | None) -> str:
        index = flat_index(e.buffer, e.indices)
        return f"{self.name_of(e.buffer.data)}[{self.expr(index, lane)}]"

    def expr_Call(self, e: Call, lane: str | None) -> str:
        if e.op in ("call_extern", "call_pure_extern", "call_packed"):
            return self._call_out(e, lane)
        fn = intrin.lookup(e.op)
        if fn is None:
            raise CodegenError(
                f"the {self.language.upper()} backend does not know the function {e.op!r}"
            )
        return fn.source(self.language, [self.expr(a, lane) for a in e.args], e.dtype)


    def _call_out(self, e: Call, lane: str | None) -> str:
        """A C function by name: ``expf(x)``; a packed function (CPU only) as the runtime's
        ``mlc_call_packed("name", A, n, m, ...)``, a buffer as its pointer and its sizes."""
        name = e.args[0].value if e.args and isinstance(e.args[0], StringImm) else None
        if name is None:
            raise CodegenError(f"{e.op} needs the function's name as its first argument")
        if e.op != "call_packed":
            return f"{name}({', '.join(self.expr(a, lane) for a in e.args[1:])})"
        if self.language != "c":
            raise CodegenError(
                f"call_packed({name!r}) calls Python on the CPU; it cannot run in a "
                f"{self.language.upper()} kernel (build for the llvm target)"
            )
        args = [f'"{name}"']
        for a in e.args[1:]:
            if isinstance(a, Call) and a.op == "buffer_arg" and isinstance(a.args[0], BufferLoad):
                args.append(self.name_of(a.args[0].buffer.data))
                args += [self.expr(x, lane) for x in a.args[1:]]
            else:
                args.append(self.expr(a, lane))
        return f"mlc_call_packed({', '.join(args)})"


def _strip(text: str) -> str:
    """``(a < b)`` -> ``a < b`` when the outer parentheses belong together."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for k, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and k < len(text) - 1:
            return text
    return text[1:-1]


def _saturating_cast(value: str, dtype: str, ctype: str) -> str:
    """C for a float -> integer conversion as mlc defines it (:mod:`mlc.tir.float_int`)."""
    if dt.bits(dtype) == 64:
        return f"(({ctype})mlc_sat_{'u' if dt.is_uint(dtype) else 'i'}64({value}))"
    lo, hi = int_range(dtype)
    return f"(({ctype})mlc_sat({value}, {lo}.0, {hi}.0))"


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0


def codegen_c(func: PrimFunc, name: str | None = None) -> str:
    """The C source of ``func`` (lowered): includes, two helpers, and one function."""
    return CodeGenC().function(func, c_name(name or func.name))
