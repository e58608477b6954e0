"""Math functions (``Call`` nodes) as LLVM intrinsics or C library calls.

=========================================  ==================================================
``exp exp2 log log2 log10 sqrt fabs pow``  LLVM intrinsics (``llvm.exp.f32``, vectors too);
``floor ceil trunc round nearbyint sin``   the backend turns them into instructions
``cos``                                    (``vsqrtps``) or libm calls (``expf``)
``tanh erf``                               libm (``tanhf``, ``erf``), one lane at a time
``sigmoid``                                ``1 / (1 + exp(-x))``
``rsqrt``                                  ``1 / sqrt(x)``
``abs``                                    ``fabs`` on floats, ``x < 0 ? -x : x`` on integers
=========================================  ==================================================

``round`` rounds halves away from zero (C's ``round``); ``nearbyint`` rounds halves to even,
like ``numpy.round``. ``float16`` math is computed in ``float32``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from mlc.errors import CodegenError
from mlc.target.llvm import types as ty
from mlc.tir import dtype as dt

LLVM_UNARY = (
    "exp", "exp2", "log", "log2", "log10", "sqrt", "fabs", "floor", "ceil", "trunc", "round",
    "nearbyint", "sin", "cos",
)
LIBM_UNARY = ("tanh", "erf")
EXPANDED = ("sigmoid", "rsqrt", "abs")
MATH_OPS = (*LLVM_UNARY, *LIBM_UNARY, *EXPANDED, "pow")


class IntrinsicEmitter:
    """Mixin: ``math(op, args, dtype)``. Needs ``self.b``, ``self.declare`` and ``self.cast``."""

    b: ir.IRBuilder

    if TYPE_CHECKING:  # provided by ExprEmitter

        def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function: ...
        def cast(self, v: ir.Value, src: str, dst: str) -> ir.Value: ...
        def broadcast(self, v: ir.Value, lanes: int) -> ir.Value: ...

    def math(self, op: str, args: list[ir.Value], dtype: str) -> ir.Value:
        if op not in MATH_OPS:
            raise CodegenError(
                f"unknown function {op!r} in a Call; the LLVM backend knows "
                f"{', '.join(sorted(MATH_OPS))}"
            )
        if op == "abs" and not dt.is_float(dtype):
            x = args[0]
            zero = ir.Constant(x.type, None)
            return self.b.select(self.b.icmp_signed("<", x, zero), self.b.neg(x), x)
        if not dt.is_float(dtype):
            raise CodegenError(f"{op}() needs a float argument, got {dtype}")
        if dt.element(dtype) == "float16":
            wide = dt.with_lanes("float32", dt.lanes(dtype))
            args = [self.cast(a, dtype, wide) for a in args]
            return self.cast(self.math(op, args, wide), wide, dtype)
        x = args[0]
        if op == "abs":
            op = "fabs"
        if op in LLVM_UNARY:
            return self._intrinsic(op, [x])
        if op == "pow":
            base, exponent = args
            if ty.lanes_of(base.type) != ty.lanes_of(exponent.type):
                n = max(ty.lanes_of(base.type), ty.lanes_of(exponent.type))
                base = base if ty.is_vector(base.type) else self.broadcast(base, n)
                exponent = exponent if ty.is_vector(exponent.type) else self.broadcast(exponent, n)
            return self._intrinsic("pow", [base, exponent])
        one = ir.Constant(x.type, 1.0) if not ty.is_vector(x.type) else ir.Constant(
            x.type, [1.0] * x.type.count
        )
        if op == "sigmoid":
            e = self._intrinsic("exp", [self.b.fneg(x)])
            return self.b.fdiv(one, self.b.fadd(one, e))
        if op == "rsqrt":
            return self.b.fdiv(one, self._intrinsic("sqrt", [x]))
        return self._libm(op, x)

    def _intrinsic(self, name: str, args: list[ir.Value]) -> ir.Value:
        t = args[0].type
        fn = self.declare(f"llvm.{name}.{ty.mangle(t)}", ir.FunctionType(t, [a.type for a in args]))
        return self.b.call(fn, args)

    def _libm(self, name: str, x: ir.Value) -> ir.Value:
        """Call libm's ``name`` (``tanhf`` for float); vectors one lane at a time."""
        et = ty.element_of(x.type)
        symbol = name + ("f" if isinstance(et, ir.FloatType) else "")
        fn = self.declare(symbol, ir.FunctionType(et, [et]))
        if not ty.is_vector(x.type):
            return self.b.call(fn, [x])
        result: ir.Value = ir.Constant(x.type, None)
        for k in range(x.type.count):
            lane = ir.Constant(ty.I32, k)
            y = self.b.call(fn, [self.b.extract_element(x, lane)])
            result = self.b.insert_element(result, y, lane)
        return result
