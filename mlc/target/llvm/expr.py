"""Expressions of the lowered loop IR as LLVM instructions.

:class:`ExprEmitter` turns one ``PrimExpr`` into one LLVM value at the builder's position. It
is a mixin of :class:`mlc.target.llvm.codegen.CodeGenLLVM`, which owns the builder (``self.b``), the
variables in scope (``self.vars``) and the module. The rules worth knowing:

* ``FloorDiv``/``FloorMod`` on signed integers round towards minus infinity (Python's ``//``
  and ``%``), ``Div``/``Mod`` truncate (C's ``/`` and ``%``).
* ``Select`` is lazy: when a side reads memory it is emitted as a branch, so
  ``te.if_then_else(i < n, A[i], 0)`` never reads ``A[n]``. For vectors the sides are
  emitted under a *mask*: their loads become masked loads that leave the other lanes alone.
* A load whose index is ``Ramp(base, 1, L)`` is one vector load; any other vector index is a
  gather, one lane at a time.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from mlc.errors import CodegenError
from mlc.target.common import flat_index
from mlc.target.llvm import types as ty
from mlc.target.llvm.checks import CheckEmitter, splat
from mlc.target.llvm.convert import ConvertEmitter
from mlc.target.llvm.extern import ExternCallEmitter
from mlc.target.llvm.intrin import IntrinsicEmitter
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
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
from mlc.tir.functor import IRVisitor
from mlc.tir.stmt import Buffer

_FAST = ("contract",)  # fast-math flags on float arithmetic: let LLVM fuse a*b+c into an FMA
_CMP_SYMBOL = {LT: "<", LE: "<=", GT: ">", GE: ">=", EQ: "==", NE: "!="}


def _may_fault(e: PrimExpr) -> bool:
    """Does evaluating ``e`` read memory or divide integers (so it must not run speculatively)?"""
    found = False

    class _Find(IRVisitor):
        def visit_BufferLoad(self, op: BufferLoad) -> None:
            nonlocal found
            found = True

        def visit_Call(self, op: Call) -> None:
            nonlocal found
            found = found or op.op == "omp_get_thread_num"
            self.generic_visit(op)

        def _division(self, op: Any) -> None:
            nonlocal found
            if dt.is_int(op.dtype) and not isinstance(op.b, IntImm):
                found = True
            self.generic_visit(op)

        visit_Div = visit_Mod = visit_FloorDiv = visit_FloorMod = _division

    _Find().visit(e)
    return found


def _operand_exprs(e: PrimExpr) -> list[PrimExpr]:
    """The expressions ``e`` is computed from (its fields that are expressions)."""
    out: list[PrimExpr] = []
    for name in ("a", "b", "value", "base", "stride", "condition", "true_value",
                 "false_value"):
        child = getattr(e, name, None)
        if isinstance(child, PrimExpr):
            out.append(child)
    return out


def _normalize_index(index: PrimExpr) -> PrimExpr:
    """Bring a vector index to ``Ramp``/``Broadcast`` form when it is ``Ramp + Broadcast``."""
    if isinstance(index, Add):
        a, b = _normalize_index(index.a), _normalize_index(index.b)  # b + (b + ramp) too
        if isinstance(a, Broadcast) and isinstance(b, Ramp):
            a, b = b, a
        if isinstance(a, Ramp) and isinstance(b, Broadcast):
            return Ramp(a.base + b.value, a.stride, a.lanes)
        if isinstance(a, Broadcast) and isinstance(b, Broadcast):
            return Broadcast(a.value + b.value, a.lanes)
    return index


class ExprEmitter(CheckEmitter, ConvertEmitter, IntrinsicEmitter, ExternCallEmitter):
    """Mixin: ``emit(expr) -> ir.Value``. Needs ``self.b``, ``self.vars``, ``self.module``."""

    b: ir.IRBuilder
    vars: dict[Var, ir.Value]
    module: ir.Module
    _mask: ir.Value | None
    data_vars: set[Var]  # variables that hold data, not indices (see _int_flags)
    index_memo: dict[int, tuple[PrimExpr, bool]]  # _index_only's answers, by id

    # -- entry --------------------------------------------------------------------------------
    def emit(self, e: PrimExpr) -> ir.Value:
        method = getattr(self, "emit_" + type(e).__name__, None)
        if method is None:
            raise CodegenError(
                f"the LLVM backend cannot compile a {type(e).__name__} expression; lowering "
                "should have removed it (did you build a function that was not lowered?)"
            )
        return method(e)

    # -- leaves -------------------------------------------------------------------------------
    def emit_Var(self, e: Var) -> ir.Value:
        try:
            return self.vars[e]
        except KeyError:
            raise CodegenError(
                f"variable {e.name!r} is used but never defined (no loop, let or parameter "
                "binds it)"
            ) from None

    emit_SizeVar = emit_Var

    def emit_IntImm(self, e: IntImm) -> ir.Value:
        t = ty.value_type(e.dtype)
        if dt.is_bool(e.dtype):
            return ir.Constant(t, int(bool(e.value)))
        return ir.Constant(t, e.value & ((1 << dt.bits(e.dtype)) - 1))

    def emit_FloatImm(self, e: FloatImm) -> ir.Value:
        if dt.element(e.dtype) == "float16":  # text IR wants half constants in a special hex
            return self.b.fptrunc(ir.Constant(ir.FloatType(), e.value), ty.value_type(e.dtype))
        return ir.Constant(ty.value_type(e.dtype), e.value)

    def emit_StringImm(self, e: StringImm) -> ir.Value:
        raise CodegenError(f"string {e.value!r} cannot be a value in compiled code")

    # -- arithmetic ---------------------------------------------------------------------------
    def _operands(self, e: Any) -> tuple[ir.Value, ir.Value]:
        a, b = self.emit(e.a), self.emit(e.b)
        return self._match_lanes(a, b)

    def _match_lanes(self, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
        la, lb = ty.lanes_of(a.type), ty.lanes_of(b.type)
        if la != lb:
            if la == 1:
                a = self.broadcast(a, lb)
            elif lb == 1:
                b = self.broadcast(b, la)
            else:
                raise CodegenError(f"operands with {la} and {lb} lanes cannot be combined")
        return a, b

    def _int_flags(self, e: Add | Sub | Mul) -> list[str]:
        """``nsw`` (no signed wrap) on index arithmetic, which lets LLVM widen and vectorize
        loops; never on arithmetic of data (a loaded value, a scalar argument, a call),
        which wraps as in numpy: with ``nsw`` LLVM folded ``A[i] + 1 > A[i]`` to true and
        ``A[i] * 2 // 2`` to ``A[i]``, wrong at ``INT32_MAX``."""
        if dt.element(e.dtype) not in ("int32", "int64"):
            return []
        return ["nsw"] if self._index_only(e) else []

    def _index_only(self, e: PrimExpr) -> bool:
        """Is ``e`` built of constants, loop and size variables only (no data)?"""
        memo = self.index_memo
        hit = memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        if isinstance(e, (IntImm, FloatImm)):
            result = True
        elif isinstance(e, Var):
            result = e not in self.data_vars
        elif isinstance(e, (BufferLoad, Call, Let)):
            result = False
        else:
            result = all(self._index_only(c) for c in _operand_exprs(e))
        memo[id(e)] = (e, result)
        return result

    def mark_data(self, var: Var, value: PrimExpr | None = None) -> None:
        """``var`` holds data (a scalar argument; a let whose value reads data): arithmetic
        on it may wrap, so it gets no ``nsw``."""
        if value is None or not self._index_only(value):
            self.data_vars.add(var)

    def emit_Add(self, e: Add) -> ir.Value:
        a, b = self._operands(e)
        if dt.is_float(e.dtype):
            return self.b.fadd(a, b, flags=_FAST)
        return self.b.add(a, b, flags=self._int_flags(e))

    def emit_Sub(self, e: Sub) -> ir.Value:
        a, b = self._operands(e)
        if dt.is_float(e.dtype):
            return self.b.fsub(a, b, flags=_FAST)
        return self.b.sub(a, b, flags=self._int_flags(e))

    def emit_Mul(self, e: Mul) -> ir.Value:
        a, b = self._operands(e)
        if dt.is_float(e.dtype):
            return self.b.fmul(a, b, flags=_FAST)
        return self.b.mul(a, b, flags=self._int_flags(e))

    def _divisor(self, b: ir.Value, e: Any = None, a: ir.Value | None = None) -> ir.Value:
        """The divisor to use for ``a / b``: under a vector mask, lanes that are switched off
        divide by one; with the division ``e`` given, a zero divisor (or ``INT_MIN / -1``) is
        caught by :meth:`~mlc.target.llvm.checks.CheckEmitter.guard_divisor`."""
        if self._mask is not None and ty.is_vector(b.type):
            b = self.b.select(self._mask, b, splat(b.type, 1))
        if e is None:
            return b
        return self.guard_divisor(e, a, b)

    def emit_Div(self, e: Div) -> ir.Value:
        a, b = self._operands(e)
        if dt.is_float(e.dtype):
            return self.b.fdiv(a, b, flags=_FAST)
        b = self._divisor(b, e, a)
        return self.b.udiv(a, b) if dt.is_uint(e.dtype) else self.b.sdiv(a, b)

    def emit_Mod(self, e: Mod) -> ir.Value:
        a, b = self._operands(e)
        if dt.is_float(e.dtype):
            return self.b.frem(a, b)
        b = self._divisor(b, e, a)
        return self.b.urem(a, b) if dt.is_uint(e.dtype) else self.b.srem(a, b)

    def _floor_parts(self, e: Any) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
        """Truncated quotient and remainder, and whether they need correcting: C rounds
        ``-7 / 2`` to ``-3`` but floor division gives ``-4``. The correction applies when the
        remainder is non-zero and its sign differs from the divisor's."""
        a, b = self._operands(e)
        b = self._divisor(b, e, a)
        q = self.b.sdiv(a, b)
        r = self.b.srem(a, b)
        zero = ir.Constant(a.type, [0] * a.type.count) if ty.is_vector(a.type) else ir.Constant(
            a.type, 0
        )
        r_neg = self.b.icmp_signed("<", r, zero)
        b_neg = self.b.icmp_signed("<", b, zero)
        fix = self.b.and_(self.b.icmp_signed("!=", r, zero), self.b.xor(r_neg, b_neg))
        return q, r, b, fix

    def emit_FloorDiv(self, e: FloorDiv) -> ir.Value:
        if dt.is_float(e.dtype):
            return self.math("floor", [self.emit(Div(e.a, e.b))], e.dtype)
        if dt.is_uint(e.dtype):
            a, b = self._operands(e)
            return self.b.udiv(a, self._divisor(b, e, a))
        q, _, _, fix = self._floor_parts(e)
        return self.b.sub(q, self.b.zext(fix, q.type))

    def emit_FloorMod(self, e: FloorMod) -> ir.Value:
        if dt.is_uint(e.dtype):
            a, b = self._operands(e)
            return self.b.urem(a, self._divisor(b, e, a))
        if dt.is_float(e.dtype):
            raise CodegenError("floor modulo (%) needs integers")
        _, r, b, fix = self._floor_parts(e)
        return self.b.select(fix, self.b.add(r, b), r)

    def _min_max(self, e: Any, op: str) -> ir.Value:
        a, b = self._operands(e)
        if dt.is_float(e.dtype):
            # NaN wins, as in numpy's maximum/minimum: pick a when it is NaN, and b (NaN or
            # not) when the ordered comparison fails
            pick_a = self.b.or_(self.b.fcmp_ordered(op, a, b), self.b.fcmp_unordered("uno", a, a))
        elif dt.is_uint(e.dtype) or dt.is_bool(e.dtype):
            pick_a = self.b.icmp_unsigned(op, a, b)
        else:
            pick_a = self.b.icmp_signed(op, a, b)
        return self.b.select(pick_a, a, b)

    def emit_Min(self, e: Min) -> ir.Value:
        return self._min_max(e, "<")

    def emit_Max(self, e: Max) -> ir.Value:
        return self._min_max(e, ">")

    # -- comparisons and logic ----------------------------------------------------------------
    def _compare(self, e: Any) -> ir.Value:
        a, b = self._operands(e)
        op = _CMP_SYMBOL[type(e)]
        if dt.is_float(e.a.dtype):
            # != is true for NaN (unordered), the others false, as in Python and numpy.
            if op == "!=":
                return self.b.fcmp_unordered(op, a, b)
            return self.b.fcmp_ordered(op, a, b)
        if dt.is_uint(e.a.dtype) or dt.is_bool(e.a.dtype):
            return self.b.icmp_unsigned(op, a, b)
        return self.b.icmp_signed(op, a, b)

    emit_LT = emit_LE = emit_GT = emit_GE = emit_EQ = emit_NE = _compare

    def emit_And(self, e: And) -> ir.Value:
        return self.b.and_(*self._operands(e))

    def emit_Or(self, e: Or) -> ir.Value:
        return self.b.or_(*self._operands(e))

    def emit_Not(self, e: Not) -> ir.Value:
        return self.b.not_(self.emit(e.a))

    # -- select and let -----------------------------------------------------------------------
    def emit_Select(self, e: Select) -> ir.Value:
        self.conditional += 1
        try:
            return self._select(e)
        finally:
            self.conditional -= 1

    def _select(self, e: Select) -> ir.Value:
        lazy = _may_fault(e.true_value) or _may_fault(e.false_value)
        if not lazy:
            cond = self.emit(e.condition)
            t, f = self._match_lanes(self.emit(e.true_value), self.emit(e.false_value))
            if ty.lanes_of(cond.type) == 1 or ty.lanes_of(cond.type) == ty.lanes_of(t.type):
                return self.b.select(cond, t, f)
            raise CodegenError(f"Select condition lanes do not match its values: {e.dtype}")
        if dt.lanes(e.condition.dtype) == 1:
            return self._branchy_select(e)
        return self._masked_select(e)

    def _branchy_select(self, e: Select) -> ir.Value:
        cond = self.emit(e.condition)
        then_bb = self.b.append_basic_block("select.true")
        else_bb = self.b.append_basic_block("select.false")
        merge_bb = self.b.append_basic_block("select.end")
        self.b.cbranch(cond, then_bb, else_bb)
        self.b.position_at_end(then_bb)
        t = self.emit(e.true_value)
        then_end = self.b.block
        self.b.position_at_end(else_bb)
        f = self.emit(e.false_value)
        else_end = self.b.block
        # Both sides must have the same type; broadcast a scalar side inside its own block.
        if ty.lanes_of(t.type) != ty.lanes_of(f.type):
            if ty.lanes_of(t.type) == 1:
                self.b.position_at_end(then_end)
                t = self.broadcast(t, ty.lanes_of(f.type))
            else:
                f = self.broadcast(f, ty.lanes_of(t.type))
        self.b.position_at_end(then_end)
        self.b.branch(merge_bb)
        self.b.position_at_end(else_end)
        self.b.branch(merge_bb)
        self.b.position_at_end(merge_bb)
        phi = self.b.phi(t.type)
        phi.add_incoming(t, then_end)
        phi.add_incoming(f, else_end)
        return phi

    def _masked_select(self, e: Select) -> ir.Value:
        cond = self.emit(e.condition)
        outer = self._mask
        not_cond = self.b.not_(cond)
        try:
            self._mask = cond if outer is None else self.b.and_(outer, cond)
            t = self.emit(e.true_value)
            self._mask = not_cond if outer is None else self.b.and_(outer, not_cond)
            f = self.emit(e.false_value)
        finally:
            self._mask = outer
        t, f = self._match_lanes(t, f)
        return self.b.select(cond, t, f)

    def emit_Let(self, e: Let) -> ir.Value:
        self.mark_data(e.var, e.value)
        self.vars[e.var] = self.emit(e.value)
        try:
            return self.emit(e.body)
        finally:
            del self.vars[e.var]

    # -- casts --------------------------------------------------------------------------------
    def emit_Cast(self, e: Cast) -> ir.Value:
        v = self.emit(e.value)
        src = e.value.dtype
        n = dt.lanes(e.dtype)
        if ty.lanes_of(v.type) == 1 and n > 1:
            v = self.cast(v, src, dt.element(e.dtype))
            return self.broadcast(v, n)
        return self.cast(v, src, e.dtype)

    # -- vectors ------------------------------------------------------------------------------
    def broadcast(self, v: ir.Value, lanes: int) -> ir.Value:
        """``<lanes x T>`` with ``v`` in every lane (insertelement + shufflevector)."""
        vt = ir.VectorType(v.type, lanes)
        one = self.b.insert_element(ir.Constant(vt, None), v, ir.Constant(ty.I32, 0))
        mask = ir.Constant(ir.VectorType(ty.I32, lanes), [0] * lanes)
        return self.b.shuffle_vector(one, ir.Constant(vt, None), mask)

    def emit_Broadcast(self, e: Broadcast) -> ir.Value:
        return self.broadcast(self.emit(e.value), e.lanes)

    def emit_Ramp(self, e: Ramp) -> ir.Value:
        base = self.broadcast(self.emit(e.base), e.lanes)
        et = ty.element_of(base.type)
        if isinstance(e.stride, IntImm):
            steps = ir.Constant(base.type, [k * e.stride.value for k in range(e.lanes)])
        else:
            iota = ir.Constant(base.type, list(range(e.lanes)))
            steps = self.b.mul(self.broadcast(self.emit(e.stride), e.lanes), iota)
        if isinstance(et, ir.IntType):
            return self.b.add(base, steps)
        return self.b.fadd(base, steps)  # pragma: no cover - ramps are integer

    # -- memory -------------------------------------------------------------------------------
    def element_pointer(self, buffer: Buffer, index: ir.Value) -> ir.Value:
        """The address of element ``index`` (a scalar integer) of ``buffer``."""
        base = self.emit_Var(buffer.data)
        typed = self.b.bitcast(base, ty.memory_type(buffer.dtype).as_pointer())
        if index.type.width < 64:
            index = self.b.sext(index, ty.I64)
        return self.b.gep(typed, [index], inbounds=True)

    def _to_register(self, v: ir.Value, dtype: str) -> ir.Value:
        if dt.is_bool(dtype):
            return self.b.trunc(v, ty.with_lanes(ty.I1, ty.lanes_of(v.type)))
        return v

    def _to_memory(self, v: ir.Value, dtype: str) -> ir.Value:
        if dt.is_bool(dtype):
            return self.b.zext(v, ty.with_lanes(ty.I8, ty.lanes_of(v.type)))
        return v

    def _load(self, e: BufferLoad) -> ir.Value:
        buf = e.buffer
        index = _normalize_index(flat_index(buf, e.indices))
        mem = ty.memory_type(buf.dtype)
        align = max(1, dt.nbytes(dt.element(buf.dtype)))
        if dt.lanes(index.dtype) == 1:
            ptr = self.element_pointer(buf, self.emit(index))
            return self._to_register(self.b.load(ptr, align=align), buf.dtype)
        if isinstance(index, Broadcast):
            ptr = self.element_pointer(buf, self.emit(index.value))
            v = self._to_register(self.b.load(ptr, align=align), buf.dtype)
            return self.broadcast(v, index.lanes)
        lanes = dt.lanes(index.dtype)
        vt = ir.VectorType(mem, lanes)
        if isinstance(index, Ramp) and isinstance(index.stride, IntImm) and index.stride.value == 1:
            ptr = self.b.bitcast(self.element_pointer(buf, self.emit(index.base)), vt.as_pointer())
            if self._mask is None:
                v = self.b.load(ptr, align=align)
            else:
                v = self._masked_load(ptr, vt, align)
            return self._to_register(v, buf.dtype)
        return self._to_register(self._gather(buf, self.emit(index), vt, align), buf.dtype)

    def _masked_load(self, ptr: ir.Value, vt: ir.VectorType, align: int) -> ir.Value:
        name = f"llvm.masked.load.{ty.mangle(vt)}.p0"
        fnty = ir.FunctionType(vt, [vt.as_pointer(), ty.I32, ir.VectorType(ty.I1, vt.count), vt])
        fn = self.declare(name, fnty)
        return self.b.call(fn, [ptr, ir.Constant(ty.I32, align), self._mask, ir.Constant(vt, None)])

    def _gather(self, buf: Buffer, index: ir.Value, vt: ir.VectorType, align: int) -> ir.Value:
        """Load lane by lane; under a mask, a switched-off lane is not read at all."""
        result: ir.Value = ir.Constant(vt, None)
        for k in range(vt.count):
            lane = ir.Constant(ty.I32, k)
            idx = self.b.extract_element(index, lane)
            if self._mask is None:
                v = self.b.load(self.element_pointer(buf, idx), align=align)
                result = self.b.insert_element(result, v, lane)
                continue
            on = self.b.extract_element(self._mask, lane)
            before = self.b.block
            load_bb = self.b.append_basic_block("gather.lane")
            next_bb = self.b.append_basic_block("gather.next")
            self.b.cbranch(on, load_bb, next_bb)
            self.b.position_at_end(load_bb)
            v = self.b.load(self.element_pointer(buf, idx), align=align)
            loaded = self.b.insert_element(result, v, lane)
            self.b.branch(next_bb)
            self.b.position_at_end(next_bb)
            phi = self.b.phi(vt)
            phi.add_incoming(result, before)
            phi.add_incoming(loaded, load_bb)
            result = phi
        return result

    def store(self, buf: Buffer, value: PrimExpr, indices: tuple[PrimExpr, ...]) -> None:
        """``buf[indices] = value``; with a run-time index check, only when it is in range."""
        bad = self.index_check(buf, indices)
        if bad is None:
            self._store(buf, value, indices)
            return
        with self.b.if_then(self.b.not_(bad), likely=True):
            self._store(buf, value, indices)

    def emit_BufferLoad(self, e: BufferLoad) -> ir.Value:
        """A load; with a run-time index check, an index out of range reads nothing (the
        value is zero) and records the error."""
        bad = self.index_check(e.buffer, e.indices)
        if bad is None:
            return self._load(e)
        before = self.b.block
        with self.b.if_then(self.b.not_(bad), likely=True):
            value = self._load(e)
            loaded_in = self.b.block
        phi = self.b.phi(value.type)
        phi.add_incoming(value, loaded_in)
        phi.add_incoming(ir.Constant(value.type, None), before)
        return phi

    def _store(self, buf: Buffer, value: PrimExpr, indices: tuple[PrimExpr, ...]) -> None:
        """``buf[indices] = value``: a scalar store, a vector store or a scatter."""
        index = _normalize_index(flat_index(buf, indices))
        v = self.emit(value)
        align = max(1, dt.nbytes(dt.element(buf.dtype)))
        lanes = dt.lanes(index.dtype)
        if lanes == 1:
            if ty.is_vector(v.type):
                raise CodegenError(
                    f"a {value.dtype} value is stored at the scalar index {index} of "
                    f"{buf.name!r}; a vector store needs a Ramp index"
                )
            ptr = self.element_pointer(buf, self.emit(index))
            self.b.store(self._to_memory(v, buf.dtype), ptr, align=align)
            return
        if not ty.is_vector(v.type):
            v = self.broadcast(v, lanes)
        v = self._to_memory(v, buf.dtype)
        if isinstance(index, Ramp) and isinstance(index.stride, IntImm) and index.stride.value == 1:
            ptr = self.element_pointer(buf, self.emit(index.base))
            self.b.store(v, self.b.bitcast(ptr, v.type.as_pointer()), align=align)
            return
        idx = self.emit(index)
        for k in range(lanes):
            lane = ir.Constant(ty.I32, k)
            ptr = self.element_pointer(buf, self.b.extract_element(idx, lane))
            self.b.store(self.b.extract_element(v, lane), ptr, align=align)

    # -- calls --------------------------------------------------------------------------------
    def emit_Call(self, e: Call) -> ir.Value:
        if e.op == "omp_get_thread_num":
            return self.thread_num()
        if e.op == "likely":
            return self.emit(e.args[0])
        if e.op == "check_index":
            return self.checked_index(e)
        if e.op == "call_packed":
            return self.packed_call(e)
        if e.op in ("call_extern", "call_pure_extern"):
            return self.extern_call(e)
        if e.op == "buffer_arg":
            raise CodegenError("buffer_arg(...) passes a buffer to call_packed and only there")
        args = [self.emit(a) for a in e.args]
        return self.math(e.op, args, e.dtype)

    def thread_num(self) -> ir.Value:  # overridden by the code generator
        return ir.Constant(ty.I32, 0)

    def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function:
        """The module's declaration of function ``name`` (made on first use)."""
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(self.module, fnty, name)
