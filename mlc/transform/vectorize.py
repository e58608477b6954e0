"""``vectorize_loops``: turn each ``vectorized`` loop into vector instructions.

The loop variable becomes the vector ``Ramp(min, 1, L)`` of all its values at once, and
everything that depends on it becomes a vector of ``L`` lanes::

    for j in vectorized(range(8)):             C[Ramp(i*8, 1, 8)] =
        C[i*8 + j] = A[i*8 + j] * B[i]    ->        A[Ramp(i*8, 1, 8)] * Broadcast(B[i], 8)

* an index affine in the variable with stride 1 is a contiguous vector load/store; another
  stride gives ``Ramp(base, stride, L)`` (codegen gathers), and an index that does not depend
  on the variable is one scalar load that is broadcast;
* a guard that depends on the variable (``if io*4 + ii < n``, from a split that does not
  divide) is handled by *loop partitioning*: when the guard holds for every lane, which for an
  affine condition is checked at the first and last lane, the vector body runs; otherwise the
  original loop runs serially with its guard (the tail)::

        if io*4 + 0 < n and io*4 + 3 < n:
            C[Ramp(io*4, 1, 4)] = ...          # full vector
        else:
            for ii in range(4):
                if io*4 + ii < n: C[io*4 + ii] = ...

A loop inside the vectorized loop (serial or unrolled, whose bounds do not depend on the
vector variable) stays a scalar loop with a vector body, as in TVM::

    for i in vectorized(range(8)):             for k in range(K):
        for k in range(K):                ->       C[Ramp(i0, 1, 8)] = C[Ramp(i0, 1, 8)] +
            C[i0 + i] = C[i0 + i] +                    A[Ramp(i0*K + k, K, 8)] *
                A[(i0 + i)*K + k] * B[k]               Broadcast(B[k], 8)

This runs the iterations in another order: ``k`` outside, all the lanes of ``i`` at once,
where the loop ran all of ``k`` for one ``i`` and then the next ``i``. The pass does it only
when that order cannot change the result, that is when no lane touches an element another
lane writes. It checks a sufficient condition (``_Vectorizer.check_lanes_own``):

* every buffer stored in the body is accessed (every store and every load of it) at one and
  the same vector index ``Ramp(base, stride, L)``;
* that index gives different lanes different elements over the whole loop nest: the stride is
  not zero and ``base`` does not depend on the inner loops, or ``base`` is affine in them
  with constant coefficients and extents that, with the stride, form a mixed radix (each
  coefficient larger than everything the smaller ones reach, like ``lane*16 + j*1`` for
  ``j < 16``), so no two iterations write one element.

So a lane only reads what it wrote itself, and buffers no lane writes are only read.

A body without a loop inside is vectorized without that check, as before and as in TVM: it
relies on the schedule, which vectorizes only loops over spatial (independent) block
iterations (``Schedule.vectorize``). A scan's ``s[t, i] = s[t - 1, i] + x[t, i]`` is such a
body: it reads another row than it writes, which the check above could not prove harmless.

When the body cannot become vector code (an allocation or a parallel/vectorized loop inside
it, a loop whose bounds depend on the vector variable, a store to one location from every
lane, lanes that read or write each other's elements such as a stencil ``B[i] = A[i] +
A[i+1]`` that also writes ``A``, an index that is not affine in the variable, a guard that is
not a conjunction of comparisons or that mentions an inner loop) the loop is left as a
``serial`` loop: correct, only slower.
"""

from __future__ import annotations

from typing import Any

from mlc.tir import dtype as dt
from mlc.tir.arith import simplify
from mlc.tir.arith.linear import expr_key, to_linear
from mlc.tir.expr import (
    GE,
    GT,
    LE,
    LT,
    Add,
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    FloatImm,
    IntImm,
    Let,
    Mul,
    Not,
    PrimExpr,
    Ramp,
    Select,
    StringImm,
    Sub,
    Var,
    as_int,
    const,
)
from mlc.tir.functor import IRMutator, post_order_visit, substitute, uses_var
from mlc.tir.stmt import (
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)


def vectorize_loops(func: PrimFunc) -> PrimFunc:
    """Rewrite every ``vectorized`` loop of constant extent into vector code (see above)."""
    return func.with_body(_LoopVectorizer().visit(func.body))


class _CannotVectorize(Exception):
    """Raised inside the vectorizer when the loop must stay a scalar loop."""


MAX_LANES = 256
"""The widest vector this pass makes. A vectorized loop longer than this runs as a serial
loop over vectors of ``MAX_LANES`` lanes (and one shorter vector for the rest): LLVM took 6 s
to compile a 4096-lane vector, 150 s for 16384, and aborted the process (an assertion in
instruction selection) at 65536, where a student had only vectorized a long axis."""


class _LoopVectorizer(IRMutator):
    def visit_For(self, op: For) -> Stmt:
        body = self.visit(op.body)
        if op.kind is not ForKind.VECTORIZED:
            return op if body is op.body else _with_body(op, body)
        lanes = as_int(op.extent)
        if lanes is not None and lanes > MAX_LANES:
            return _in_chunks(op, body, lanes)
        return _vector_or_serial(op, body)


def _vector_or_serial(op: For, body: Stmt) -> Stmt:
    lanes = as_int(op.extent)
    if lanes == 1:
        return substitute(body, {op.loop_var: op.min})  # type: ignore[no-any-return]
    if lanes is not None and lanes > 1:
        vectorized = vectorize_loop(op.loop_var, op.min, lanes, body)
        if vectorized is not None:
            return vectorized
    return For(op.loop_var, op.min, op.extent, ForKind.SERIAL, body, None, op.annotations)


def _in_chunks(op: For, body: Stmt, lanes: int) -> Stmt:
    """``for v in vectorized(lanes)`` as ``for c in range(lanes // MAX_LANES)`` over vectors
    of ``MAX_LANES`` lanes, then one vector of the ``lanes % MAX_LANES`` left."""
    var, chunks, rest = op.loop_var, lanes // MAX_LANES, lanes % MAX_LANES
    chunk = Var(f"{var.name}_chunk", var.dtype)
    lane = Var(var.name, var.dtype)
    start = op.min + chunk * MAX_LANES
    vector = For(lane, const(0, var.dtype), const(MAX_LANES, var.dtype), ForKind.VECTORIZED,
                 substitute(body, {var: start + lane}))
    parts: list[Stmt] = [For(chunk, const(0, var.dtype), const(chunks, var.dtype), ForKind.SERIAL,
                 _vector_or_serial(vector, vector.body))]
    if rest:
        last = Var(var.name, var.dtype)
        tail = For(last, const(0, var.dtype), const(rest, var.dtype), ForKind.VECTORIZED,
                   substitute(body, {var: op.min + chunks * MAX_LANES + last}))
        parts.append(_vector_or_serial(tail, tail.body))
    return seq(*parts)


def _with_body(op: For, body: Stmt) -> For:
    return For(op.loop_var, op.min, op.extent, op.kind, body, op.thread_binding, op.annotations)


def vectorize_loop(var: Var, lo: PrimExpr, lanes: int, body: Stmt) -> Stmt | None:
    """The vector form of ``for var in range(lo, lo + lanes): body``, or None if the body
    cannot be vectorized."""
    guards = _guards_on(var, body)
    try:
        if not guards:
            return _Vectorizer(var, lo, lanes).vectorize(body)
        full: PrimExpr | None = None
        for guard in guards:
            whole = _whole_vector_condition(guard.condition, var, lo, lanes)
            full = whole if full is None else full & whole
        assert full is not None
        inside = _bound_inside(body)
        if uses_var(full, lambda v: id(v) in inside):
            raise _CannotVectorize()  # a guard on an inner loop's variable: not one test
        vector_body = _Vectorizer(var, lo, lanes).vectorize(_drop_guards(body, guards))
    except _CannotVectorize:
        return None
    tail = For(var, lo, const(lanes, var.dtype), ForKind.SERIAL, body)
    return IfThenElse(full, vector_body, tail)


def _guards_on(var: Var, body: Stmt) -> list[IfThenElse]:
    found: list[IfThenElse] = []

    def visit(n: Any) -> None:
        if isinstance(n, IfThenElse) and uses_var(n.condition, lambda v: v is var):
            found.append(n)

    post_order_visit(body, visit)
    return found


def _bound_inside(body: Stmt) -> set[int]:
    """ids of the variables a loop or let inside ``body`` binds."""
    found: set[int] = set()

    def visit(n: Any) -> None:
        if isinstance(n, For):
            found.add(id(n.loop_var))
        elif isinstance(n, (LetStmt, Let)):
            found.add(id(n.var))

    post_order_visit(body, visit)
    return found


def _drop_guards(body: Stmt, guards: list[IfThenElse]) -> Stmt:
    """``body`` with each guard replaced by its then-branch (the guards hold in every lane)."""
    ids = {id(g) for g in guards}

    class _Drop(IRMutator):
        def visit_IfThenElse(self, op: IfThenElse) -> Stmt:
            if id(op) in ids:
                return self.visit(op.then_case)  # type: ignore[no-any-return]
            return self.generic_visit(op)  # type: ignore[no-any-return]

    return _Drop().visit(body)  # type: ignore[no-any-return]


def _whole_vector_condition(cond: PrimExpr, var: Var, lo: PrimExpr, lanes: int) -> PrimExpr:
    """A scalar condition that holds exactly when ``cond`` holds on every lane.

    Only a conjunction of comparisons between expressions affine in ``var`` is accepted: each
    comparison is then monotone in ``var`` and it is enough to check the lane where it is
    weakest (the last lane of ``i < n``, the first of ``i >= m``), or both ends when the
    direction is not known."""
    if isinstance(cond, And):
        return _whole_vector_condition(cond.a, var, lo, lanes) & _whole_vector_condition(
            cond.b, var, lo, lanes
        )
    if not uses_var(cond, lambda v: v is var):
        return cond
    if not isinstance(cond, (LT, LE, GT, GE)):
        raise _CannotVectorize()
    vec = _Vectorizer(var, lo, lanes)
    slope: PrimExpr = const(0, var.dtype)
    for side, sign in ((cond.a, 1), (cond.b, -1)):
        v = vec.expr(side)
        if isinstance(v, Ramp):
            slope = slope + v.stride if sign > 0 else slope - v.stride
        elif dt.lanes(v.dtype) != 1:
            raise _CannotVectorize()  # not affine in the loop variable
    first = substitute(cond, {var: lo})
    last = substitute(cond, {var: lo + (lanes - 1)})
    step = as_int(simplify(slope))
    if step is None:
        return first & last  # type: ignore[no-any-return]
    grows = step > 0  # does a - b grow from lane to lane?
    if step == 0 or grows != isinstance(cond, (LT, LE)):
        return first  # type: ignore[no-any-return]
    return last  # type: ignore[no-any-return]


class _Vectorizer:
    """Rewrites one loop body with ``var`` standing for ``Ramp(lo, 1, lanes)``."""

    def __init__(self, var: Var, lo: PrimExpr, lanes: int) -> None:
        self.var = var
        self.lanes = lanes
        self.ramp = Ramp(lo, const(1, lo.dtype), lanes)
        self.lets: dict[Var, Var] = {}  # scalar let variables that became vectors
        self.inner: dict[int, tuple[Var, int | None, int | None]] = {}  # loops inside: min, extent
        self.bound: set[int] = set()  # variables bound inside the body (loops, lets)
        self.stores: dict[Any, tuple[Any, Ramp]] = {}  # buffer -> (index key, index)
        self.loads: list[tuple[Any, Any]] = []  # (buffer, index key) of every load

    # -- helpers ---------------------------------------------------------------------------
    def is_vec(self, e: PrimExpr) -> bool:
        return dt.lanes(e.dtype) != 1

    def widen(self, e: PrimExpr) -> PrimExpr:
        return e if self.is_vec(e) else Broadcast(e, self.lanes)

    def vectorize(self, body: Stmt) -> Stmt:
        """The vector form of ``body``; raises ``_CannotVectorize`` when there is none or
        when running the lanes at once could change the result."""
        out = self.stmt(body)
        if self.inner:
            self.check_lanes_own()
        return out

    def check_lanes_own(self) -> None:
        """Refuse unless each lane only touches its own elements of the buffers the body
        writes (see the module docstring): then running the lanes in any order, statement by
        statement and inner iteration by inner iteration, gives the result of the loop."""
        for buf, key in self.loads:
            if buf in self.stores and self.stores[buf][0] != key:
                raise _CannotVectorize()  # a lane could read what another lane writes
        for _, index in self.stores.values():
            self._check_disjoint(index)

    def _check_disjoint(self, index: Ramp) -> None:
        stride = as_int(simplify(index.stride))
        if not uses_var(index.base, lambda v: id(v) in self.bound):
            if stride == 0:
                raise _CannotVectorize()  # every lane would write the same place
            return  # lane l always writes base + l*stride: its own element
        if stride is None or stride == 0:
            raise _CannotVectorize()
        # base = sum(c * k for the inner loops k) + rest, rest free of inner variables
        digits = [(abs(stride), self.lanes - 1)]
        for atom, coef in to_linear(simplify(index.base)).terms.values():
            if not uses_var(atom, lambda v: id(v) in self.bound):
                continue
            if (
                isinstance(atom, Cast)
                and dt.is_int(atom.dtype)
                and dt.is_int(atom.value.dtype)
                and dt.bits(atom.dtype) >= dt.bits(atom.value.dtype)
            ):
                atom = atom.value  # int64(k): the loop variable k, widened (no wrap-around)
            found = self.inner.get(id(atom)) if isinstance(atom, Var) else None
            if found is None or found[2] is None:
                raise _CannotVectorize()  # not affine in an inner loop of constant extent
            digits.append((abs(coef), found[2] - 1))
        # a mixed radix: each coefficient exceeds what all the smaller ones reach together
        reach = 0
        for coef, top in sorted(digits):
            if coef <= reach:
                raise _CannotVectorize()  # two iterations could write one element
            reach += coef * top

    # -- statements ------------------------------------------------------------------------
    def stmt(self, s: Stmt) -> Stmt:
        if isinstance(s, BufferStore):
            if len(s.indices) != 1:
                raise _CannotVectorize()
            index = self.expr(s.indices[0])
            if not isinstance(index, Ramp) or as_int(index.stride) == 0:
                raise _CannotVectorize()  # every lane would write the same place
            buf, key = _buffer_key(s.buffer), expr_key(index)
            if self.stores.setdefault(buf, (key, index))[0] != key:
                raise _CannotVectorize()  # two stores to one buffer at different indices
            return BufferStore(s.buffer, self.widen(self.expr(s.value)), (index,))
        if isinstance(s, For):
            return self._inner_loop(s)
        if isinstance(s, SeqStmt):
            return SeqStmt(tuple(self.stmt(x) for x in s.seq))
        if isinstance(s, IfThenElse):
            cond = self.expr(s.condition)
            if self.is_vec(cond):
                raise _CannotVectorize()
            else_case = None if s.else_case is None else self.stmt(s.else_case)
            return IfThenElse(cond, self.stmt(s.then_case), else_case)
        if isinstance(s, LetStmt):
            value = self.expr(s.value)
            var = self._let_var(s.var, value)
            return LetStmt(var, value, self.stmt(s.body))
        if isinstance(s, Evaluate):
            return Evaluate(self.expr(s.value))
        raise _CannotVectorize()  # allocations, blocks

    def _inner_loop(self, s: For) -> Stmt:
        """A serial or unrolled loop inside the vectorized one stays a scalar loop around a
        vector body; its bounds must be the same on every lane."""
        if s.kind not in (ForKind.SERIAL, ForKind.UNROLLED) or s.thread_binding is not None:
            raise _CannotVectorize()
        lo, extent = self.expr(s.min), self.expr(s.extent)
        if self.is_vec(lo) or self.is_vec(extent):
            raise _CannotVectorize()  # the loop's bounds differ from lane to lane
        var = Var(s.loop_var.name, s.loop_var.dtype)  # the tail keeps the old one
        self.lets[s.loop_var] = var
        self.bound.add(id(var))
        self.inner[id(var)] = (var, as_int(lo), as_int(extent))
        return For(var, lo, extent, s.kind, self.stmt(s.body), None, s.annotations)

    def _let_var(self, var: Var, value: PrimExpr) -> Var:
        # a new variable even for a scalar: the serial tail next to the vector body still
        # defines the old one, and each variable is defined once
        new = Var(var.name, value.dtype)
        self.lets[var] = new
        self.bound.add(id(new))
        return new

    # -- expressions -----------------------------------------------------------------------
    def expr(self, e: PrimExpr) -> PrimExpr:
        if e is self.var:
            return self.ramp
        if isinstance(e, Var):
            return self.lets.get(e, e)
        if isinstance(e, (IntImm, FloatImm, StringImm)):
            return e
        if isinstance(e, BinaryOp):
            return self._binary(e)
        if isinstance(e, BufferLoad):
            return self._load(e)
        if isinstance(e, Cast):
            v = self.expr(e.value)
            if v is e.value:
                return e
            if isinstance(v, Ramp) and dt.is_int(e.dtype) and dt.is_int(v.base.dtype):
                # int64(ramp(i, 1, 4)) (a widened index) is still a ramp: a vector load
                return Ramp(Cast(e.dtype, v.base), Cast(e.dtype, v.stride), v.lanes)
            return Cast(dt.with_lanes(e.dtype, dt.lanes(v.dtype)), v)
        if isinstance(e, Not):
            v = self.expr(e.a)
            return e if v is e.a else Not(v, dt.with_lanes("bool", dt.lanes(v.dtype)))
        if isinstance(e, Select):
            return self._select(e)
        if isinstance(e, Call):
            args = tuple(self.expr(a) for a in e.args)
            if not any(self.is_vec(a) for a in args):
                return e if all(a is b for a, b in zip(args, e.args)) else Call(e.dtype, e.op, args)
            return Call(
                dt.with_lanes(e.dtype, self.lanes),
                e.op,
                tuple(a if isinstance(a, StringImm) else self.widen(a) for a in args),
            )
        if isinstance(e, Let):
            value = self.expr(e.value)
            var = self._let_var(e.var, value)
            return Let(var, value, self.expr(e.body))
        raise _CannotVectorize()  # nested vectors, reductions

    def _binary(self, e: BinaryOp) -> PrimExpr:
        a, b = self.expr(e.a), self.expr(e.b)
        if not self.is_vec(a) and not self.is_vec(b):
            return e if (a is e.a and b is e.b) else type(e)(a, b, e.dtype)
        if dt.is_int(e.dtype) and not isinstance(e, CmpOp):
            ramp = _ramp_arith(e, a, b)
            if ramp is not None:
                return ramp
        return type(e)(self.widen(a), self.widen(b))

    def _load(self, e: BufferLoad) -> PrimExpr:
        indices = tuple(self.expr(i) for i in e.indices)
        self.loads.append((_buffer_key(e.buffer), expr_key(indices[0] if len(indices) == 1
                                                            else indices)))
        if not any(self.is_vec(i) for i in indices):
            if all(a is b for a, b in zip(indices, e.indices)):
                return e
            return BufferLoad(e.buffer, indices, e.dtype)
        if len(indices) != 1 or not isinstance(indices[0], Ramp):
            raise _CannotVectorize()  # a gather through a non-affine index
        return BufferLoad(e.buffer, indices, dt.with_lanes(e.dtype, self.lanes))

    def _select(self, e: Select) -> PrimExpr:
        cond = self.expr(e.condition)
        t, f = self.expr(e.true_value), self.expr(e.false_value)
        if not any(self.is_vec(x) for x in (cond, t, f)):
            if cond is e.condition and t is e.true_value and f is e.false_value:
                return e
            return Select(cond, t, f, e.dtype)
        if self.is_vec(cond) and (_has_load(e.true_value) or _has_load(e.false_value)):
            # A vector select evaluates both sides, but a Select may guard a load that is
            # out of bounds on the lanes where its condition is false.
            raise _CannotVectorize()
        t, f = self.widen(t), self.widen(f)
        return Select(cond, t, f, t.dtype)


def _buffer_key(buf: Any) -> int:
    """Buffers that share their data pointer are one array."""
    data = getattr(buf, "data", None)
    return id(buf if data is None else data)


def _ramp_arith(e: BinaryOp, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """Keep affine integer arithmetic on ramps a ramp: ``Ramp(b, s) * 4 = Ramp(4b, 4s)``."""
    lanes = a.lanes if isinstance(a, Ramp) else b.lanes if isinstance(b, Ramp) else None
    pa, pb = _ramp_parts(a), _ramp_parts(b)
    if lanes is None or pa is None or pb is None:
        return None
    (base_a, stride_a), (base_b, stride_b) = pa, pb
    if isinstance(e, Add):
        return Ramp(base_a + base_b, _combine(stride_a, stride_b, 1), lanes)
    if isinstance(e, Sub):
        return Ramp(base_a - base_b, _combine(stride_a, stride_b, -1), lanes)
    if isinstance(e, Mul) and stride_b is None and stride_a is not None:
        return Ramp(base_a * base_b, stride_a * base_b, lanes)
    if isinstance(e, Mul) and stride_a is None and stride_b is not None:
        return Ramp(base_a * base_b, base_a * stride_b, lanes)
    return None


def _ramp_parts(e: PrimExpr) -> tuple[PrimExpr, PrimExpr | None] | None:
    """``(base, stride)`` of a ramp, ``(e, None)`` of a scalar, None of another vector."""
    if isinstance(e, Ramp):
        return e.base, e.stride
    return (e, None) if dt.lanes(e.dtype) == 1 else None


def _combine(x: PrimExpr | None, y: PrimExpr | None, sign: int) -> PrimExpr:
    """``x + sign * y`` where None stands for a stride of zero (one side of them is set)."""
    if y is None:
        assert x is not None
        return x
    if x is None:
        return y if sign > 0 else 0 - y
    return x + y if sign > 0 else x - y


def _has_load(e: PrimExpr) -> bool:
    found = False

    def visit(n: Any) -> None:
        nonlocal found
        found = found or isinstance(n, BufferLoad)

    post_order_visit(e, visit)
    return found
