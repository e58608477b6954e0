"""Converting values between dtypes in the LLVM code generator (a mixin of
:class:`mlc.target.llvm.expr.ExprEmitter`): widening, narrowing, int <-> float, to bool, and
float -> integer as mlc defines it (:mod:`mlc.tir.float_int`)."""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from mlc.target.llvm import types as ty
from mlc.target.llvm.checks import splat
from mlc.tir import dtype as dt
from mlc.tir.float_int import int_range


class ConvertEmitter:
    """Mixin: ``cast(value, src, dst)``. Needs the ExprEmitter's ``b`` (the IR builder)."""

    b: ir.IRBuilder

    def cast(self, v: ir.Value, src: str, dst: str) -> ir.Value:
        """Convert the value ``v`` of dtype ``src`` to ``dst`` (same lane count)."""
        target = ty.with_lanes(ty.scalar_type(dst), ty.lanes_of(v.type))
        if v.type == target:
            return v
        s, d = dt.element(src), dt.element(dst)
        if dt.is_bool(d):
            zero = ir.Constant(v.type, None)
            if dt.is_float(s):
                return self.b.fcmp_unordered("!=", v, zero)
            return self.b.icmp_unsigned("!=", v, zero)
        if dt.is_float(s) and dt.is_float(d):
            if dt.bits(d) > dt.bits(s):
                return self.b.fpext(v, target)
            return self.b.fptrunc(v, target)
        if dt.is_float(s):
            return self._float_to_int(v, s, d, target)
        signed = not (dt.is_uint(s) or dt.is_bool(s))
        if dt.is_float(d):
            return self.b.sitofp(v, target) if signed else self.b.uitofp(v, target)
        width_s, width_d = ty.element_of(v.type).width, target.element.width if ty.is_vector(
            target
        ) else target.width
        if width_d < width_s:
            return self.b.trunc(v, target)
        return self.b.sext(v, target) if signed else self.b.zext(v, target)

    def _float_to_int(self, v: ir.Value, src: str, dst: str, target: ir.Type) -> ir.Value:
        """mlc's float -> integer conversion (:mod:`mlc.tir.float_int`: toward zero,
        saturating, NaN 0; a plain ``fptosi`` is poison out of range) as vector-friendly
        IR: clamp into the range, convert, then fix the top end and NaN with selects.
        (LLVM's ``fptosi.sat`` intrinsics compile to one scalar conversion per lane on x86:
        37x the instructions of a quantize kernel.)"""
        if dt.element(src) == "float16":  # clamp in float32: f16 cannot hold 2**15 - 1
            v = self.b.fpext(v, ty.with_lanes(ir.FloatType(), ty.lanes_of(v.type)))
            src = "float32"
        lo, hi = int_range(dst)
        limit = float(hi + 1)  # 2**(bits - 1) or 2**bits: a power of two, exact
        np_float = np.float32 if dt.element(src) == "float32" else np.float64
        below = float(np.nextafter(np_float(limit), np_float(0)))  # largest float < limit
        top = min(float(hi), below)
        low_c, top_c = splat(v.type, float(lo)), splat(v.type, top)
        c = self.b.select(self.b.fcmp_ordered(">", v, low_c), v, low_c)  # NaN -> lo (fixed below)
        c = self.b.select(self.b.fcmp_ordered("<", c, top_c), c, top_c)
        r = self.b.fptoui(c, target) if dt.is_uint(dst) else self.b.fptosi(c, target)
        if top < hi:  # the float just below 2**31 (say) is not 2**31 - 1: the top end by test
            past = self.b.fcmp_ordered(">=", v, splat(v.type, limit))
            r = self.b.select(past, splat(target, hi), r)
        nan = self.b.fcmp_unordered("uno", v, v)
        return self.b.select(nan, splat(target, 0), r)
