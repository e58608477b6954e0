"""Math functions (``Call`` nodes) as LLVM intrinsics or C library calls.

Which form each name takes is a column of the intrinsic table (:mod:`mlc.tir.intrin`):

==============  ==================================================================
``intrinsic``   LLVM intrinsics (``llvm.exp.f32``, vectors too); the backend turns
                them into instructions (``vsqrtps``) or libm calls (``expf``)
``libm``        the C library (``tanhf``, ``erf``), one lane at a time
``expanded``    ``sigmoid`` = ``1 / (1 + exp(-x))``, ``rsqrt`` = ``1 / sqrt(x)``,
                ``abs`` = ``fabs`` on floats, ``x < 0 ? -x : x`` on integers
==============  ==================================================================

``round`` rounds halves away from zero (C's ``round``); ``nearbyint`` rounds halves to even,
like ``numpy.round``. ``float16`` math is computed in ``float32``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from mlc.errors import CodegenError
from mlc.target.llvm import types as ty
from mlc.target.llvm.dot import DotEmitter
from mlc.tir import dtype as dt
from mlc.tir import intrin


class IntrinsicEmitter(DotEmitter):
    """Mixin: ``math(op, args, dtype)``. Needs ``self.b``, ``self.declare`` and ``self.cast``."""

    b: ir.IRBuilder

    if TYPE_CHECKING:  # provided by ExprEmitter

        def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function: ...
        def cast(self, v: ir.Value, src: str, dst: str) -> ir.Value: ...
        def broadcast(self, v: ir.Value, lanes: int) -> ir.Value: ...

    def math(self, op: str, args: list[ir.Value], dtype: str) -> ir.Value:
        fn = intrin.lookup(op)
        if fn is not None and fn.llvm == "dot":  # dp4a, dp2a_bf16: see mlc.target.llvm.dot
            return self.dot_product(op, args, dtype)
        if fn is None or fn.llvm == "codegen":
            known = [n for n, row in sorted(intrin.INTRINSICS.items())
                     if row.llvm not in ("codegen", "dot")]
            raise CodegenError(
                f"unknown function {op!r} in a Call; the LLVM backend knows {', '.join(known)}"
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
            return self._intrinsic("fabs", [x])
        if fn.llvm == "intrinsic":
            n = max(ty.lanes_of(a.type) for a in args)
            if any(ty.lanes_of(a.type) != n for a in args):  # pow(vector, scalar)
                args = [a if ty.is_vector(a.type) else self.broadcast(a, n) for a in args]
            return self._intrinsic(fn.llvm_name or op, args)
        if fn.llvm == "libm":
            return self._libm(op, x)
        one = ir.Constant(x.type, 1.0) if not ty.is_vector(x.type) else ir.Constant(
            x.type, [1.0] * x.type.count
        )
        if op == "sigmoid":
            e = self._intrinsic("exp", [self.b.fneg(x)])
            return self.b.fdiv(one, self.b.fadd(one, e))
        if op == "rsqrt":
            return self.b.fdiv(one, self._intrinsic("sqrt", [x]))
        raise CodegenError(f"the LLVM backend has no expansion of {op!r}")  # pragma: no cover

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
