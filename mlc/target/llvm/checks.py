"""Run-time checks in compiled code: a failure is recorded, never a trap.

A CPU traps on an integer division by zero (SIGFPE) and reads any address it is given, and
either would kill the notebook's kernel. So the code this backend writes

* divides by one instead of by zero (or ``INT_MIN`` by -1) and
* skips a load or store whose index is outside its buffer (a load gives zero),

and records the first such failure of a call in the module's error record ``@__mlc_error``
(the site number and the offending value). The Module clears the record before a call and
raises the typed error after it (:mod:`mlc.runtime.checks`). Each site is described in
``check_sites`` so the error can name the expression.

Only what cannot be decided before the run is checked: a non-constant divisor, an index read
from data, an index into a buffer of symbolic size, an access under a condition that the
enclosing loops do not prove in range. Kernels over constant shapes carry no index checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llvmlite import ir

from mlc.runtime.checks import ERROR_RECORD
from mlc.target.common import flat_index
from mlc.target.llvm import types as ty
from mlc.tir import dtype as dt
from mlc.tir.arith import Analyzer
from mlc.tir.expr import Broadcast, BufferLoad, IntImm, PrimExpr, Ramp, Range, Var, convert
from mlc.tir.functor import contains
from mlc.tir.stmt import Buffer
from mlc.transform.flatten_buffers import without_index_widening

if TYPE_CHECKING:
    from collections.abc import Callable


def splat(t: ir.Type, value: int | float) -> ir.Constant:
    """The constant ``value`` of type ``t``, in every lane of a vector type."""
    return ir.Constant(t, [value] * t.count) if ty.is_vector(t) else ir.Constant(t, value)


class CheckEmitter:
    """Mixin of the LLVM code generator: division guards and index checks.

    The state lives on the code generator: ``bounds_check`` (index checks on?),
    ``check_sites`` (what each recorded site guards), ``current_store`` (the buffer being
    stored, for messages), ``conditional`` (how many ifs/selects enclose the code) and
    ``loop_ranges`` (the enclosing loops, to prove indices in range) and
    ``checked_by_dimension`` (flattened parameters whose every index flatten_buffers proved
    or checked: :func:`mlc.transform.flatten_buffers.checked_by_dimension`)."""

    b: ir.IRBuilder
    module: ir.Module
    _mask: ir.Value | None
    bounds_check: bool
    check_sites: list[tuple[str, str, str]]
    current_store: str
    conditional: int
    loop_ranges: dict[Var, Range]
    checked_by_dimension: dict[int, Buffer]
    free_vars: set[int]  # ids of the function's sizes and scalar parameters

    if TYPE_CHECKING:  # provided by ExprEmitter
        emit: Callable[[PrimExpr], ir.Value]

        def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function: ...
        def cast(self, v: ir.Value, src: str, dst: str) -> ir.Value: ...
        def broadcast(self, v: ir.Value, lanes: int) -> ir.Value: ...

    # -- integer division ---------------------------------------------------------------------
    def guard_divisor(self, e: Any, a: ir.Value | None, b: ir.Value) -> ir.Value:
        """The divisor of the integer division ``e`` (``a / b``) with the failures replaced
        by one: zero, and -1 when ``a`` is the signed type's smallest value. A non-zero
        constant needs no check; otherwise it is a compare and a select, which LLVM hoists
        out of loops where the divisor does not change."""
        if isinstance(e.b, IntImm) and e.b.value not in (0, -1):
            return b
        bad = self.b.icmp_unsigned("==", b, splat(b.type, 0))
        if a is not None and dt.is_int(e.dtype) and not dt.is_uint(e.dtype):
            bits = dt.bits(dt.element(e.dtype))
            lowest = splat(a.type, -(1 << (bits - 1)) & ((1 << bits) - 1))
            minus_one = splat(b.type, (1 << bits) - 1)
            overflow = self.b.and_(self.b.icmp_unsigned("==", a, lowest),
                                   self.b.icmp_unsigned("==", b, minus_one))
            bad = self.b.or_(bad, overflow)
        self.fail_if(bad, self.check_site("division", e), b)
        return self.b.select(bad, splat(b.type, 1), b)

    # -- indices ------------------------------------------------------------------------------
    def index_check(self, buf: Buffer, indices: tuple[PrimExpr, ...]) -> ir.Value | None:
        """An ``i1`` that is true when the access is out of range, for the accesses that
        :func:`mlc.transform.check_bounds` cannot decide before the run: an index read from
        data (a gather ``A[I[i]]``), a buffer of symbolic size, an access under a condition
        (whose guard may be wrong). None when no check is needed or checks are off."""
        if not self.bounds_check or len(buf.shape) != 1:
            return None
        flat = self.checked_by_dimension.get(id(buf.data))
        if flat is not None and flat.name == buf.name and str(flat.shape[0]) == str(buf.shape[0]):
            return None  # a flattened parameter: flatten_buffers proved or checked each index
        index = flat_index(buf, indices)
        numel = convert(buf.shape[0])
        data_dependent = contains(index, lambda n: isinstance(n, BufferLoad))
        if not (data_dependent or not isinstance(numel, IntImm) or self.conditional > 0
                or self._over_symbolic_loop(index)):  # fmt: skip
            return None
        if not data_dependent and self._provably_inside(index, numel):
            return None
        n = self.cast(self.emit(numel), numel.dtype, "int64")
        if isinstance(index, Ramp) and self._mask is None:  # the two ends are enough
            ends = [index.base, index.base + index.stride * (index.lanes - 1)]
        elif isinstance(index, Broadcast):
            ends = [index.value]
        else:
            ends = [index]
        site = self.check_site("index", f"{buf.name}[{_shown(index)}]",
                               f" of {buf.name} with {numel} elements")
        bad: ir.Value | None = None
        for value in (self.emit(x) for x in ends):
            out = self.b.icmp_unsigned(">=", self._int64(value), _splat_like(value, n, self))
            if ty.is_vector(out.type) and self._mask is not None:
                out = self.b.and_(out, self._mask)
            bad = out if bad is None else self.b.or_(bad, out)
            self.fail_if(out, site, value)
        assert bad is not None  # at least one end
        return self._any(bad)

    def checked_index(self, e: Any) -> ir.Value:
        """``check_index(i, n, what)`` (from :func:`mlc.transform.flatten_buffers`): the index
        ``i`` of one dimension of size ``n``; when it is outside ``[0, n)`` the failure is
        recorded and 0 is used instead, so the access stays inside the array."""
        index, extent, what = e.args
        value = self.emit(index)
        if not self.bounds_check:
            return value
        n = self.emit(extent)
        site = self.check_site("index", getattr(what, "value", str(what)))
        bad = self.b.icmp_unsigned(">=", self._int64(value), self._int64(n))
        self.fail_if(bad, site, value)
        return self.b.select(bad, splat(value.type, 0), value)

    def _over_symbolic_loop(self, index: PrimExpr) -> bool:
        """Does ``index`` use a loop variable whose range is symbolic (``for i in range(m)``)?
        check_bounds could not bound such an access before the run, even into an array of
        constant shape (``A[i * 3]`` with ``A`` of 10 elements)."""
        ranges, free = self.loop_ranges, self.free_vars

        def symbolic(n: Any) -> bool:
            if id(n) in free:  # A[i + k] with k a size or a scalar parameter: any value
                return True
            dom = ranges.get(n) if isinstance(n, Var) else None
            return dom is not None and not (
                isinstance(dom.min, IntImm) and isinstance(dom.extent, IntImm))

        return contains(index, symbolic)

    def _provably_inside(self, index: PrimExpr, numel: PrimExpr) -> bool:
        """Do the enclosing loops' ranges prove ``0 <= index < numel`` (every lane)?"""
        analyzer = Analyzer()
        for var, dom in self.loop_ranges.items():
            analyzer.bind(var, dom)
        if isinstance(index, Ramp):
            ends = [index.base, index.base + index.stride * (index.lanes - 1)]
        elif isinstance(index, Broadcast):
            ends = [index.value]
        elif dt.lanes(index.dtype) == 1:
            ends = [index]
        else:
            return False
        return all(analyzer.can_prove(e >= 0) and analyzer.can_prove(e < numel) for e in ends)

    # -- the error record ---------------------------------------------------------------------
    def check_site(self, kind: str, e: Any, extra: str = "") -> int:
        """Describe what a check guards; its number (from 1) goes into the error record."""
        self.check_sites.append((kind, f"{e}{extra}", self.current_store))
        return len(self.check_sites)

    def fail_if(self, bad: ir.Value, site: int, value: ir.Value) -> None:
        """Record ``site`` and the offending ``value`` when ``bad`` holds (in any lane that
        is switched on; the value reported is that of a failing lane), unless this call
        already recorded a failure: the first one is the one a student looks for."""
        if ty.is_vector(bad.type):
            if self._mask is not None:
                bad = self.b.and_(bad, self._mask)
            wide = self._int64(value)
            # a failing lane's value: the smallest of the failing lanes' values
            keep = self.b.select(bad, wide, splat(wide.type, (1 << 63) - 1))
            smin = self.declare(f"llvm.vector.reduce.smin.v{wide.type.count}i64",
                                ir.FunctionType(ty.I64, [wide.type]))
            value = self.b.call(smin, [keep])
            bad = self._any(bad)
        record = self.error_record()
        with self.b.if_then(bad, likely=False):
            slot0 = self.b.gep(record, [ty.I32(0), ty.I32(0)], inbounds=True)
            slot1 = self.b.gep(record, [ty.I32(0), ty.I32(1)], inbounds=True)
            first = self.b.icmp_unsigned("==", self.b.load(slot0), ir.Constant(ty.I64, 0))
            with self.b.if_then(first):
                self.b.store(ir.Constant(ty.I64, site), slot0)
                self.b.store(self._int64(value), slot1)

    def error_record(self) -> ir.GlobalVariable:
        """``@__mlc_error``: two int64s (site number, offending value); zero: no error."""
        found = self.module.globals.get(ERROR_RECORD)
        if found is None:
            found = ir.GlobalVariable(self.module, ir.ArrayType(ty.I64, 2), ERROR_RECORD)
            found.initializer = ir.Constant(ir.ArrayType(ty.I64, 2), [0, 0])
        return found

    def _any(self, bad: ir.Value) -> ir.Value:
        """An ``i1`` vector reduced to "some lane is true"; a scalar as it is."""
        if not ty.is_vector(bad.type):
            return bad
        fn = self.declare(f"llvm.vector.reduce.or.v{bad.type.count}i1",
                          ir.FunctionType(ty.I1, [bad.type]))
        return self.b.call(fn, [bad])

    def _int64(self, v: ir.Value) -> ir.Value:
        """An integer value (or vector) sign-extended to 64 bits."""
        if ty.is_vector(v.type):
            element = v.type.element
            if element.width < 64:
                return self.b.sext(v, ir.VectorType(ty.I64, v.type.count))
            return v
        return self.b.sext(v, ty.I64) if v.type.width < 64 else v


def _splat_like(value: ir.Value, n: ir.Value, gen: CheckEmitter) -> ir.Value:
    """``n`` (an int64 scalar) broadcast to ``value``'s lanes, if ``value`` is a vector."""
    return gen.broadcast(n, value.type.count) if ty.is_vector(value.type) else n


def _shown(index: PrimExpr) -> PrimExpr:
    """``index`` as the student wrote it: without the int64 casts that flatten_buffers adds
    to offsets that may exceed int32 (``A[int64(i) * int64(4096)]`` reads ``A[i * 4096]``)."""

    try:
        return without_index_widening(index)
    except Exception:  # noqa: BLE001 - a message must never fail to be written
        return index
