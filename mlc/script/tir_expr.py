"""Expression parsing for the TIR parser: :class:`_ExprParser` turns ``ast`` expressions
(operators, comparisons, ``T.*`` builtins and intrinsics, casts, literals) into PrimExprs.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mlc.errors import MLCError, ZeroDivisorError
from mlc.script.source import Source
from mlc.script.tir_syntax import (
    _Func,
    _is_dtype,
    dotted,
    normalize_name,
)
from mlc.tir import dtype as dt
from mlc.tir import intrin
from mlc.tir.expr import (
    And,
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
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    StringImm,
    Var,
    _coerce,
    check_divisor,
    const,
)
from mlc.tir.stmt import (
    Buffer,
)


class _ExprParser:
    """Expressions of a prim_func: constants, names, operators, comparisons, T.* calls and
    casts. The base of the :class:`~mlc.script.tir_parser.TIRParser` mixins."""

    def __init__(self, src: Source) -> None:
        self.src = src
        self.f = _Func()
        self.flat: dict[Var, Buffer] = {}  # flat views of buffers, by their data variable
        self.allow_flat = False

    def error(self, node: ast.AST | None, message: str) -> Exception:
        return self.src.error(node, message)


    if TYPE_CHECKING:
        def _access(self, sub: ast.Subscript) -> tuple[Buffer, tuple[PrimExpr, ...]]: ...

    # -- expressions -----------------------------------------------------------------------------
    def _callee(self, call: ast.Call | None) -> str | None:
        if call is None:
            return None
        name = dotted(call.func)
        if name is None:
            return None
        # A local (a buffer or a variable) is never called, so `T.grid(...)` is the builtin
        # even when a buffer is named T, and `max(a, b)` even beside a buffer named max.
        return normalize_name(name)

    def _cond(self, node: ast.expr) -> PrimExpr:
        c = self.expr(node)
        if not dt.is_bool(dt.element(c.dtype)):
            raise self.error(node, f"expected a condition (bool), got {c} of dtype {c.dtype}")
        return c

    def literal(self, node: ast.expr | None) -> Any:
        """A Python literal (string, number, bool, dict, list, tuple); dict values that are
        not literals are parsed as expressions."""
        if node is None:
            return None
        if isinstance(node, ast.Dict):
            out = {}
            for k, v in zip(node.keys, node.values):
                key = self.literal(k)
                if not isinstance(key, str):
                    raise self.error(k or node, "attribute names are strings")
                out[key] = self.literal(v)
            return out
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return self.expr(node)

    def expr(self, node: ast.expr) -> PrimExpr:
        try:
            return self._expr(node)
        except SyntaxError:
            raise
        except MLCError as e:
            raise self.error(node, str(e)) from None
        except (ValueError, TypeError, ArithmeticError) as e:
            raise self.error(node, f"cannot build `{ast.unparse(node)}`: {e}") from None

    def _expr(self, node: ast.expr) -> PrimExpr:  # noqa: C901
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return const(v)
            if isinstance(v, (int, float)):
                return const(v)
            if isinstance(v, str):
                return StringImm(v)
            raise self.error(node, f"unexpected constant {v!r}")
        if isinstance(node, ast.Name):
            found = self.f.lookup(node.id)
            if isinstance(found, PrimExpr):
                return found
            if isinstance(found, Buffer):
                raise self.error(node, f"{node.id} is a buffer; index it: {node.id}[...]")
            if node.id in ("True", "False"):
                return const(node.id == "True")
            raise self.error(node, f"undefined name {node.id!r}: expected a loop variable, a "
                                   "block variable, a size variable or a constant")
        if isinstance(node, ast.UnaryOp):
            literal = node.operand.value if isinstance(node.operand, ast.Constant) else None
            if isinstance(node.op, ast.USub) and type(literal) in (int, float):
                assert isinstance(literal, (int, float))
                return const(-literal)  # -2147483648 is an int32, as printed
            if isinstance(node.op, ast.Not):
                return Not(self._cond(node.operand))
            operand = self.expr(node.operand)
            if isinstance(node.op, ast.USub):
                if isinstance(operand, IntImm):
                    return IntImm(-operand.value, operand.dtype)
                if isinstance(operand, FloatImm):
                    return FloatImm(-operand.value, operand.dtype)
                return -operand
            if isinstance(node.op, ast.UAdd):
                return operand
            raise self.error(node, "~ is not supported on expressions; use `not`")
        if isinstance(node, ast.BinOp):
            return self._binop(node.op, self.expr(node.left), self.expr(node.right), node)
        if isinstance(node, ast.BoolOp):
            conds = [self._cond(v) for v in node.values]
            result = conds[0]
            for c in conds[1:]:
                result = And(result, c) if isinstance(node.op, ast.And) else Or(result, c)
            return result
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise self.error(node, "chained comparisons (a < b < c) are not supported; "
                                       "write a < b and b < c")
            a, b = self.expr(node.left), self.expr(node.comparators[0])
            op = node.ops[0]
            table: dict[type, Callable[[PrimExpr, PrimExpr], PrimExpr]] = {
                ast.Lt: lambda x, y: x < y, ast.LtE: lambda x, y: x <= y,
                ast.Gt: lambda x, y: x > y, ast.GtE: lambda x, y: x >= y,
                ast.Eq: lambda x, y: x == y, ast.NotEq: lambda x, y: x != y,
            }  # fmt: skip
            if type(op) not in table:
                raise self.error(node, "expected a comparison < <= > >= == !=")
            return table[type(op)](a, b)
        if isinstance(node, ast.IfExp):
            c = self._cond(node.test)
            t, f = _coerce(self.expr(node.body), self.expr(node.orelse))
            return Select(c, t, f)
        if isinstance(node, ast.Subscript):
            buf, indices = self._access(node)
            return BufferLoad(buf, indices)
        if isinstance(node, ast.Call):
            return self._call(node)
        raise self.error(node, f"cannot use `{ast.unparse(node)}` in a prim_func expression")

    def _binop(self, op: ast.operator, a: PrimExpr, b: PrimExpr, node: ast.AST) -> PrimExpr:
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Mult):
            return a * b
        if isinstance(op, ast.Div):
            return a / b
        if isinstance(op, ast.FloorDiv):
            return self._division(FloorDiv, a, b, node)
        if isinstance(op, ast.Mod):
            return self._division(FloorMod, a, b, node)
        raise self.error(node, f"operator {type(op).__name__} is not supported in a "
                               "prim_func; use + - * / // %")

    def _division(self, cls: type, a: PrimExpr, b: PrimExpr, node: ast.AST) -> PrimExpr:
        """``a // b``, ``T.truncmod(a, b)``...: a constant zero divisor is an error at its
        line (:func:`mlc.tir.expr.check_divisor`)."""
        try:
            if cls in (FloorDiv, FloorMod):
                return a // b if cls is FloorDiv else a % b
            check_divisor(cls, a, b)
        except ZeroDivisorError as err:
            raise self.error(node, str(err)) from err
        return cls(a, b)  # type: ignore[no-any-return]

    def _call_out(self, name: str, node: ast.Call) -> PrimExpr:
        """``T.call_packed("f", T.buffer_arg(A[0, 0], n, m), 1)``, ``T.call_pure_extern(
        "float32", "expf", x)`` and ``T.call_extern(...)`` (:mod:`mlc.tir.call`)."""
        args = list(node.args)
        if name == "buffer_arg":
            load = self.expr(args[0]) if args else None
            if not isinstance(load, BufferLoad):
                raise self.error(node, "T.buffer_arg(A[0, 0], n, m): a buffer's first element "
                                       "and its sizes")
            return Call("handle", name, (load, *(self.expr(a) for a in args[1:])))
        dtype = "int32"
        if name != "call_packed":
            if len(args) < 2:
                raise self.error(node, f'T.{name}("float32", "expf", x): the result dtype, '
                                       "the C function's name, then its arguments")
            dtype = self.literal(args[0])
            if not isinstance(dtype, str) or not _is_dtype(dtype):
                raise self.error(args[0], f'T.{name}: the result dtype comes first, a string '
                                          f'like "float32"; got {ast.unparse(args[0])}')
            args.pop(0)
        fname = self.expr(args[0]) if args else None
        if not isinstance(fname, StringImm):
            raise self.error(node, f"T.{name}: the function's name (a string) comes first")
        return Call(dtype, name, (fname, *(self.expr(a) for a in args[1:])))

    def _call(self, node: ast.Call) -> PrimExpr:  # noqa: C901 - one case per builtin
        if isinstance(node.func, ast.Attribute) and node.func.attr == "astype":
            if len(node.args) != 1:
                raise self.error(node, 'x.astype("float32") takes one dtype')
            return self._cast(self.literal(node.args[0]), self.expr(node.func.value), node)
        name = self._callee(node)
        if name is None:
            raise self.error(node.func, f"cannot call `{ast.unparse(node.func)}` in a "
                                        "prim_func")
        if any(k.arg is None for k in node.keywords) or any(
                isinstance(a, ast.Starred) for a in node.args):
            raise self.error(node, "*args and **kwargs are not allowed in a prim_func")
        args = node.args
        n = len(args)

        def arity(k: int, usage: str) -> None:
            if n != k or node.keywords:
                raise self.error(node, f"T.{name} takes {k} argument(s): {usage}; got {n}")

        if _is_dtype(name):
            if n == 0:
                raise self.error(node, f"T.{name}(x) needs a value")
            arity(1, f"T.{name}(x)")
            if isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                if not dt.is_float(name):
                    raise self.error(node, f'T.{name}("{args[0].value}"): only a float dtype '
                                           'takes a string ("nan", "inf")')
                return FloatImm(float(args[0].value), name)  # "nan", "inf"
            lit = _number(args[0])
            if lit is not None:  # T.uint64(18446744073709551615): the literal, not an int64
                return self.constant(lit, name, node)
            return self._cast(name, self.expr(args[0]), node)
        if name in ("Cast", "cast"):
            arity(2, 'T.Cast("float32", x)')
            first, second = args
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                return self._cast(first.value, self.expr(second), node)
            return self._cast(self.literal(second), self.expr(first), node)
        if name in ("max", "min"):
            arity(2, f"T.{name}(a, b)")
            a, b = _coerce(self.expr(args[0]), self.expr(args[1]))
            return Max(a, b) if name == "max" else Min(a, b)
        if name in ("if_then_else", "Select", "select"):
            arity(3, f"T.{name}(cond, then, else)")
            c = self._cond(args[0])
            t, f = _coerce(self.expr(args[1]), self.expr(args[2]))
            return Select(c, t, f)
        if name in ("truncdiv", "truncmod", "floordiv", "floormod"):
            arity(2, f"T.{name}(a, b)")
            a, b = _coerce(self.expr(args[0]), self.expr(args[1]))
            cls = {"truncdiv": Div, "truncmod": Mod, "floordiv": FloorDiv,
                   "floormod": FloorMod}[name]
            return self._division(cls, a, b, node)
        if name == "abs":
            arity(1, "T.abs(x)")
            x = self.expr(args[0])
            if dt.is_float(x.dtype):
                return Call(x.dtype, "fabs", (x,))
            return Select(x < 0, -x, x)
        if name in ("call_packed", "call_extern", "call_pure_extern", "buffer_arg"):
            return self._call_out(name, node)
        row = intrin.lookup(name)
        if row is not None:  # the intrinsic table (mlc.tir.intrin) is the list of functions
            k = row.arity
            arity(k, f"T.{name}({', '.join('xyzw'[:k])})")
            vals = [self.expr(a) for a in args]
            if row.float_only:
                for j in range(1, k):
                    vals[0], vals[j] = _coerce(vals[0], vals[j])
                for j in range(1, k):
                    vals[j] = _coerce(vals[0], vals[j])[1]
                if not dt.is_float(dt.element(vals[0].dtype)):
                    raise self.error(node, f"T.{name} needs a float argument, got {vals[0]} "
                                           f"of dtype {vals[0].dtype}; cast it: T.float32(x)")
            dtype = intrin.result_dtype(name, [v.dtype for v in vals])
            return Call(dtype, name, tuple(vals))
        if name == "ramp":
            arity(3, "ramp(base, stride, lanes)")
            return Ramp(self.expr(args[0]), self.expr(args[1]), self._lanes(args[2]))
        if name == "broadcast":
            arity(2, "broadcast(value, lanes)")
            return Broadcast(self.expr(args[0]), self._lanes(args[1]))
        if name == "let":
            arity(3, "let(var, value, body)")
            if not isinstance(args[0], ast.Name):
                raise self.error(args[0], "let's first argument is the new variable's name")
            value = self.expr(args[1])
            var = Var(args[0].id, value.dtype)
            self.f.scopes.append({args[0].id: var})
            try:
                return Let(var, value, self.expr(args[2]))
            finally:
                self.f.scopes.pop()
        if name in ("axis.spatial", "axis.reduce", "axis.remap", "block", "init",
                    "alloc_buffer", "reads", "writes", "Buffer"):
            raise self.error(node, f"T.{name}(...) cannot be used inside an expression")
        raise self.error(node.func, f"unknown function T.{name}: prim_func expressions may "
                                    "call T.max, T.min, T.if_then_else, casts like "
                                    "T.float32(x), and the intrinsics: "
                                    + ", ".join(intrin.names()))

    def constant(self, value: Any, dtype: str, node: ast.AST) -> PrimExpr:
        """``T.int8(-128)``: a literal of ``dtype``, refused when ``dtype`` cannot hold it
        (``T.int8(1000)`` would wrap to -24 in the compiled code)."""
        if dt.is_int(dtype) and not dt.is_bool(dtype) and isinstance(value, (int, float)):
            lo, hi = _int_range(dtype)
            if not lo <= value <= hi:
                raise self.error(node, f"{value!r} does not fit {dtype} (from {lo} to {hi}); "
                                       "use a wider dtype or a value in that range")
        try:
            return const(value, dtype)
        except MLCError as e:
            raise self.error(node, str(e)) from None

    def _int_literal(self, node: ast.expr) -> int:
        v = self.literal(node)
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.error(node, "expected an integer constant")
        return v

    def _lanes(self, node: ast.expr) -> int:
        v = self._int_literal(node)
        if v < 1:
            raise self.error(node, f"a vector has at least one lane, got {v}")
        return v

    def _cast(self, dtype: Any, value: PrimExpr, node: ast.AST) -> PrimExpr:
        if not isinstance(dtype, str) or not _is_dtype(dtype):
            raise self.error(node, f"expected a dtype string like \"float32\", got {dtype!r}")
        if value.dtype == dtype:
            return value
        return Cast(dtype, value)


def _int_range(dtype: str) -> tuple[int, int]:
    bits = dt.bits(dtype)
    if dt.is_uint(dtype):
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def _number(node: ast.expr) -> int | float | None:
    """The value of a number literal (``5``, ``-2.5``), or None."""
    sign = 1
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = -sign if isinstance(node.op, ast.USub) else sign
        node = node.operand
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return sign * value
    return None
