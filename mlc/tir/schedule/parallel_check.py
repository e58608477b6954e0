"""May the iterations of this loop run at once? One check for every way a loop becomes
parallel: the schedule primitives ``parallel``/``vectorize``/``bind`` (and te's
``s[C].parallel``, which calls them), and a parsed script's ``T.parallel``,
``T.vectorized`` and ``T.thread_binding`` loops. :func:`parallel_conflict` answers; the
caller raises its own error (``ScheduleError`` for a schedule, ``ScriptError`` at the
loop's line for a script).

Blocks carry a promise: their spatial variables say which instances are independent, and
:mod:`mlc.tir.schedule.dependence` checks the promise (a loop bound to a reduce variable, a
block reading what a neighbour writes). Statements outside blocks (a script written as
plain loops, or lowered code) carry none, so their accesses must *provably* touch
different elements in different iterations::

    for i in T.parallel(n):            # refused: every iteration updates B[0] at once
        B[0] = B[0] + T.Cast("int32", A[i])

    for i in T.parallel(8):            # fine: iteration i writes row i alone
        for j in range(128):
            C[i * 128 + j] = A[i * 128 + j] * 2.0

The proof, per pair of accesses to one buffer (a store and a load or another store), looks
for one dimension whose indices differ whenever the iterations do: each index is read as
``c * i + a1 * x1 + ... + const`` over the loop ``i`` and the loops inside it; if the
coefficient of ``i`` is larger than everything the other terms can add up to, two
iterations never meet. Small constant loop nests that this cannot read (``ij // 128``,
``ij % 128`` of a fused loop) are enumerated point by point. An index read from data
(``B[I[i]]``) proves nothing: a duplicate in ``I`` would race.

Loops bound to GPU threads are judged here only through their blocks: a hand-written
kernel's plain statements share memory between threads with barriers that lowering inserts,
which cuda-sim's run-time check models (it raises ``RaceError``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from mlc.tir.arith.analyzer import Analyzer
from mlc.tir.arith.evaluate import evaluate_known
from mlc.tir.arith.linear import to_linear
from mlc.tir.expr import (
    Broadcast,
    BufferLoad,
    IntImm,
    IterKind,
    Not,
    PrimExpr,
    Ramp,
    Range,
    Var,
)
from mlc.tir.functor import IRMutator, collect, substitute, uses_var
from mlc.tir.schedule import state
from mlc.tir.schedule.dependence import (
    conflict_between_blocks,
    conflicting_access,
    describe,
    describe_between,
)
from mlc.tir.schedule.parallel_symbolic import symbolic_separates, within_rows
from mlc.tir.stmt import (
    Allocate,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    Stmt,
)

_ENUMERATE_LIMIT = 1 << 14  # points of a loop nest enumerated when the algebra cannot tell


@dataclass
class ParallelConflict:
    """Why the iterations of ``loop`` may not run at once: ``message`` (starting with what
    was asked, e.g. ``"parallel: ..."``), ``marks`` (IR nodes to point at, with a label),
    and ``bare`` (True for plain statements outside blocks, where a script's fix is
    ``T.serial``, a reduction block or ``rfactor``)."""

    message: str
    marks: dict[Any, str] = field(default_factory=dict)
    bare: bool = False


def parallel_conflict(for_: For, what: str, params: set[Var],
                      across_threads: bool = False) -> ParallelConflict | None:
    """None when the iterations of ``for_`` may run at once (``what``: ``"parallel"``,
    ``"vectorize"``, ``"bind to threadIdx.x"``...), else why not. ``params``: the data
    variables of the function's buffers (between blocks only those are checked).
    ``across_threads``: a bind to threadIdx, where a reduction block's threads combine their
    parts (``lower_cross_thread_reduction``)."""
    found = _block_conflict(for_, what, params, across_threads)
    if found is not None:
        return found
    if for_.kind == ForKind.THREAD_BINDING or what.startswith("bind"):
        return _threads_store_one_element(for_, what, params)
    return _bare_conflict(for_, what)


def _threads_store_one_element(for_: For, what: str, params: set[Var]) -> ParallelConflict | None:
    """Plain statements of a GPU kernel share memory through barriers that lowering
    inserts, which cuda-sim's run-time check models; judged here is only what no barrier
    can make right: every thread of ``for_`` storing to the same elements of a function
    buffer, unconditionally (``B[0] = B[0] + A[tx]``: on a GPU, a wrong sum)."""
    if isinstance(for_.extent, IntImm) and for_.extent.value <= 1:
        return None
    accesses: list[_Access] = []
    _collect_accesses(for_.body, {}, [], set(), {}, accesses)
    v = for_.loop_var
    for a in accesses:
        if not a.store or a.guards or a.node.buffer.data not in params:
            continue
        if any(uses_var(i, lambda y: y is v) for i in a.indices):
            continue
        shown = f"{a.node.buffer.name}[{', '.join(str(i) for i in a.node.indices)}]"
        return ParallelConflict(
            f"{what}: every thread of {v.name!r} stores to {shown}, the same element, at "
            "once; on a GPU the stores race (a wrong, varying result). Let one thread store "
            f"(if {v.name} == 0: ...), index the store by {v.name}, or reduce across the "
            "threads with a block over a reduce variable bound to the thread axis",
            {for_: what}, bare=True)
    return None


# ---------------------------------------------------------------------------------------------
# blocks


def _block_conflict(for_: For, what: str, params: set[Var],
                    across_threads: bool) -> ParallelConflict | None:
    """A loop bound to a reduce/ordered block variable, a reduction block under the loop that
    does not depend on it (every iteration would update the same values at once), or a
    block reading what another iteration writes."""
    var, name = for_.loop_var, for_.loop_var.name
    body = for_.body  # only the outermost blocks: a blockized block speaks for its inner ones
    outer = [body] if isinstance(body, BlockRealize) else state.child_block_realizes(body)
    for br in outer:
        block = br.block
        depends = combined = spatial_too = False
        for iv, value in zip(block.iter_vars, br.iter_values):
            if not uses_var(value, lambda v: v is var):
                continue
            depends = True
            if iv.kind is IterKind.REDUCE and across_threads and block.init is not None:
                combined = True
                continue
            spatial_too = spatial_too or iv.kind is IterKind.SPATIAL
            if iv.kind in (IterKind.REDUCE, IterKind.ORDERED):
                kind = "reduce" if iv.kind == IterKind.REDUCE else "ordered (scan)"
                if iv.kind == IterKind.REDUCE:
                    fix = ("Bind it to threadIdx.x instead (the threads of a block then "
                           "combine their parts)" if what.startswith("bind")
                           and block.init is not None else "Use rfactor to make it spatial first")
                    why = (f"a reduction cannot run its steps at once ({what}): they update "
                           f"the same element. {fix}, or choose a loop bound to a spatial "
                           "variable")
                else:
                    why = ("its steps must run one after another. Choose a loop bound to a "
                           "spatial variable")
                return ParallelConflict(
                    f"{what}: the loop {name!r} is bound to the {kind} variable "
                    f"{iv.var.name} of block {block.name!r}; {why}",
                    {for_: what, br: f"{iv.var.name} is {kind}"})
        # the reduction's own update (C = C op value) is what a cross-thread reduction
        # combines: only a loop that also moves a spatial variable is checked
        checked = depends and (spatial_too or not combined)
        conflict = conflicting_access(for_, br) if checked else None
        if conflict is not None:
            return ParallelConflict(
                f"{what}: {describe(block, *conflict)}; one iteration of {name!r} may read "
                "an element another writes, so the iterations must run one after another. "
                "Write the result to a new buffer, or choose a loop whose iterations touch "
                "separate elements",
                {for_: what, br: "reads what another iteration writes"})
        if any(iv.kind != IterKind.SPATIAL for iv in block.iter_vars) and not depends:
            return ParallelConflict(
                f"{what}: block {block.name!r} under loop {name!r} is a reduction that does "
                f"not depend on {name!r}, so every iteration would update the same elements "
                "at once", {for_: what, br: "does not use the loop"})
    between = conflict_between_blocks(for_, outer, params) if len(outer) > 1 else None
    if between is not None:
        return ParallelConflict(
            f"{what}: {describe_between(*between)}; one iteration of {name!r} may read an "
            "element another writes, so the iterations must run one after another. Choose a "
            "loop whose iterations touch separate elements", {for_: what})
    return None


# ---------------------------------------------------------------------------------------------
# plain statements


@dataclass
class _Access:
    node: BufferStore | BufferLoad
    indices: list[PrimExpr]
    store: bool
    guards: list[PrimExpr]
    varying: bool = False  # an index reads a buffer of one iteration: no two indices compare


def _bare_conflict(for_: For, what: str) -> ParallelConflict | None:
    accesses: list[_Access] = []
    inner: dict[Var, Range] = {}
    _collect_accesses(for_.body, {}, [], set(), inner, accesses)
    v = for_.loop_var
    ranges = {v: Range(for_.min, for_.extent), **inner}
    name = v.name
    seen: dict[int, dict[tuple[Any, ...], set[int]] | None] = {}  # per access, enumerated
    for s in accesses:
        if not s.store:
            continue
        for x in [s, *(a for a in accesses if a is not s)]:
            if x.node.buffer.data is not s.node.buffer.data:
                continue
            if x.store and id(x) < id(s) and x is not s:
                continue  # each pair of stores once
            if _disjoint(s, x, v, ranges, seen):
                continue
            return ParallelConflict(_bare_message(what, name, s, x), {for_: what}, bare=True)
    return None


def _bare_message(what: str, name: str, s: _Access, x: _Access) -> str:
    def show(a: _Access) -> str:
        return f"{a.node.buffer.name}[{', '.join(str(i) for i in a.node.indices)}]"

    if x is s:
        clash = f"iterations of {name!r} may write the same element {show(s)}"
    else:
        verb = "write" if x.store else "read"
        clash = (f"one iteration of {name!r} writes {show(s)} where another may {verb} "
                 f"{show(x)}")
    data = [e for a in (s, x) for e in a.indices
            if collect(e, lambda n: isinstance(n, BufferLoad))]
    why = (f" (the index {data[0]} is read from data: nothing proves that two iterations "
           "touch different elements)" if data else "")
    return (f"{what}: {clash}{why}; running the iterations at once would race (a wrong, "
            "varying result)")


def _collect_accesses(s: Stmt, lets: dict[Var, PrimExpr], guards: list[PrimExpr],
                      private: set[Var], inner: dict[Var, Range], out: list[_Access]) -> None:
    """The loads and stores under ``s`` outside blocks, indices with let-bound variables
    replaced by their values, with the conditions around them; buffers allocated under the
    loop belong to one iteration and are left out."""
    def scalar(indices: tuple[PrimExpr, ...]) -> list[PrimExpr]:
        return [_lanes_as_loop(substitute(i, lets), inner) for i in indices]

    def varying(indices: list[PrimExpr]) -> bool:
        return any(collect(i, lambda n: isinstance(n, BufferLoad) and n.buffer.data in private)
                   for i in indices)

    def loads(e: PrimExpr) -> None:
        for ld in collect(e, lambda n: isinstance(n, BufferLoad)):
            if ld.buffer.data not in private:
                at = scalar(ld.indices)
                out.append(_Access(ld, at, False, list(guards), varying(at)))

    if isinstance(s, BlockRealize):
        return  # judged by its block
    if isinstance(s, BufferStore):
        loads(s.value)
        for i in s.indices:
            loads(i)
        if s.buffer.data not in private:
            at = scalar(s.indices)
            out.append(_Access(s, at, True, list(guards), varying(at)))
        return
    if isinstance(s, For):
        inner[s.loop_var] = Range(substitute(s.min, lets), substitute(s.extent, lets))
        loads(s.min)
        loads(s.extent)
        _collect_accesses(s.body, lets, guards, private, inner, out)
        return
    if isinstance(s, LetStmt):
        loads(s.value)
        _collect_accesses(s.body, {**lets, s.var: substitute(s.value, lets)}, guards, private,
                          inner, out)
        return
    if isinstance(s, IfThenElse):
        loads(s.condition)
        cond = substitute(s.condition, lets)
        _collect_accesses(s.then_case, lets, [*guards, cond], private, inner, out)
        if s.else_case is not None:
            _collect_accesses(s.else_case, lets, [*guards, _negate(cond)], private, inner, out)
        return
    if isinstance(s, Allocate):
        _collect_accesses(s.body, lets, guards, private | {s.buffer.data}, inner, out)
        return
    for c in state.children(s):
        _collect_accesses(c, lets, guards, private, inner, out)
    for e in _exprs_of(s):
        loads(e)


def _lanes_as_loop(index: PrimExpr, inner: dict[Var, Range]) -> PrimExpr:
    """A vector index of lowered code as a scalar one: ``ramp(b, s, n)`` is ``b + s * l``
    for a lane ``l`` in ``range(n)`` (a loop inside the one judged), ``broadcast(x, n)``
    is ``x``."""
    if not collect(index, lambda n: isinstance(n, (Ramp, Broadcast))):
        return index

    class Lanes(IRMutator):
        def visit_Broadcast(self, op: Broadcast) -> PrimExpr:
            return self.visit(op.value)  # type: ignore[no-any-return]

        def visit_Ramp(self, op: Ramp) -> PrimExpr:
            lane = Var("lane", "int32")
            inner[lane] = Range(IntImm(0, lane.dtype), IntImm(op.lanes, lane.dtype))
            return self.visit(op.base) + self.visit(op.stride) * lane  # type: ignore[no-any-return]

    return Lanes().visit(index)  # type: ignore[no-any-return]


def _exprs_of(s: Stmt) -> list[PrimExpr]:
    value = getattr(s, "value", None)
    return [value] if isinstance(value, PrimExpr) else []


def _negate(cond: PrimExpr) -> PrimExpr:
    return Not(cond)


def _disjoint(s: _Access, x: _Access, v: Var, ranges: dict[Var, Range],
              seen: dict[int, dict[tuple[Any, ...], set[int]] | None]) -> bool:
    """Do ``s`` (a store) and ``x`` never touch one element in two different iterations of
    ``v``? First one dimension at a time in algebra, then by enumerating small nests."""
    if len(s.indices) != len(x.indices):
        return False  # a flat view beside a shaped one: not judged, refused
    if s.varying or x.varying:
        return False  # I[0] of a buffer allocated in the loop: another value each iteration
    ana = Analyzer()
    bounds: dict[Var, tuple[int, int]] = {}
    for var, rng in ranges.items():
        lo, _ = ana.const_int_bound(rng.min)
        _, hi = ana.const_int_bound(rng.min + rng.extent - 1)
        if isinstance(lo, int) and isinstance(hi, int):
            bounds[var] = (lo, hi)
        ana.bind(var, rng)
    for w, r in zip(s.indices, x.indices):
        if _dimension_separates(ana.simplify(w), ana.simplify(r), v, bounds, set(ranges)):
            return True
    if _enumerated_disjoint(s, x, v, ranges, seen):
        return True
    return any(symbolic_separates(w, r, v, ranges, [*s.indices, *x.indices])
               or within_rows(w, r, v, ranges, s.guards, x.guards)
               for w, r in zip(s.indices, x.indices))


def _dimension_separates(w: PrimExpr, r: PrimExpr, v: Var, bounds: dict[Var, tuple[int, int]],
                         loops: set[Var]) -> bool:
    """Is ``w(v1, x1) == r(v2, x2)`` impossible for ``v1 != v2``? Both read as
    ``c * v + sum(a * x) + const`` over the loop variables; the equation
    ``c * (v1 - v2) + sum(a * x1 - a' * x2) + delta == 0`` has no solution with
    ``v1 != v2`` when the coefficient of ``v1 - v2`` exceeds what every smaller term can
    add (terms larger than it are first shown to be zero the same way), or when the gcd of
    the coefficients does not divide ``delta``."""
    lw, lr = to_linear(w), to_linear(r)
    coef_w: dict[Var, int] = {}
    coef_r: dict[Var, int] = {}
    delta = lw.const - lr.const
    others: dict[Any, int] = {}
    for lin, coefs, sign in ((lw, coef_w, 1), (lr, coef_r, -1)):
        for key, (atom, c) in lin.terms.items():
            if isinstance(atom, Var) and atom in loops:
                coefs[atom] = c
            elif uses_var(atom, lambda y: y in loops):
                return False  # a division, a product of loops, a load: not read here
            else:
                others[key] = others.get(key, 0) + sign * c
    if any(c != 0 for c in others.values()):
        return False  # sizes or scalars that do not cancel
    c = coef_w.get(v, 0)
    if c == 0 or coef_r.get(v, 0) != c:
        return False
    # (|coef|, reach, target); a loop of unknown extent reaches anywhere
    lo_v, hi_v = bounds.get(v, (0, math.inf))  # type: ignore[arg-type]
    terms: list[tuple[int, float, bool]] = [(abs(c), hi_v - lo_v, True)]
    for x in (set(coef_w) | set(coef_r)) - {v}:
        if x not in bounds:
            return False
        lo, hi = bounds[x]
        a, b = coef_w.get(x, 0), coef_r.get(x, 0)
        delta += (a - b) * lo  # x1 = lo + x1', x2 = lo + x2' with x' in [0, hi - lo]
        if a == b:
            terms.append((abs(a), hi - lo, False))  # a * (x1' - x2'), both signs
        else:
            terms += [(abs(a), hi - lo, False), (abs(b), hi - lo, False)]
    g = 0
    for coef, _, _ in terms:
        g = math.gcd(g, coef)
    if g and delta % g != 0:
        return True
    live = sorted(terms, key=lambda t: -t[0])
    changed = True
    while changed:
        changed = False
        for n, t in enumerate(live):
            coef, reach, target = t
            rest = sum(c2 * r2 for m, (c2, r2, _) in enumerate(live) if m != n and c2 and r2)
            if coef > rest + abs(delta):  # this term must be zero
                if target:
                    return True
                live.remove(t)
                changed = True
                break
    return False


def _enumerated_disjoint(s: _Access, x: _Access, v: Var, ranges: dict[Var, Range],
                         seen: dict[int, dict[tuple[Any, ...], set[int]] | None]) -> bool:
    """Enumerate a small nest of constant loops: which iterations touch which elements.
    Each access is enumerated once per loop (``seen``, by ``id``), over the loops it uses."""
    count = 1
    exprs = [*s.indices, *x.indices, *s.guards, *x.guards]
    used = {var for var in ranges
            if var is v or any(uses_var(e, lambda y, var=var: y is var)  # type: ignore[misc]
                               for e in exprs)}
    for var, rng in ranges.items():
        if var not in used:
            continue  # a loop (or another access's lane) neither access depends on
        lo, n = evaluate_known(rng.min, {}), evaluate_known(rng.extent, {})
        if not (isinstance(lo, int) and isinstance(n, int)):
            return False
        count *= max(n, 0)
        if count > _ENUMERATE_LIMIT:
            return False
    mine, theirs = (_where(a, v, ranges, seen) for a in (s, x))
    if mine is None or theirs is None:
        return False
    if x is s:
        return all(len(its) == 1 for its in mine.values())
    return all(not (mine.get(elem) and len(mine[elem] | its) > 1)
               for elem, its in theirs.items())


def _where(a: _Access, v: Var, ranges: dict[Var, Range],
           seen: dict[int, dict[tuple[Any, ...], set[int]] | None]
           ) -> dict[tuple[Any, ...], set[int]] | None:
    """The elements ``a`` touches, each with the iterations of ``v`` that touch it, over the
    constant loops ``a`` uses (checked constant by the caller); None for an index that is
    not a number (read from data)."""
    if id(a) in seen:
        return seen[id(a)]
    exprs = [*a.indices, *a.guards]
    exts: list[tuple[Var, int, int]] = []
    for var, rng in ranges.items():
        if var is v or any(uses_var(e, lambda y, var=var: y is var)  # type: ignore[misc]
                           for e in exprs):
            lo, n = evaluate_known(rng.min, {}), evaluate_known(rng.extent, {})
            assert isinstance(lo, int) and isinstance(n, int)  # checked by the caller
            exts.append((var, lo, n))
    where: dict[tuple[Any, ...], set[int]] = {}
    for point in itertools.product(*(range(lo, lo + n) for _, lo, n in exts)):
        env = {id(var): p for (var, _, _), p in zip(exts, point)}
        if any(evaluate_known(g, env) is False for g in a.guards):
            continue
        elem = tuple(evaluate_known(i, env) for i in a.indices)
        if any(not isinstance(e, int) for e in elem):
            seen[id(a)] = None
            return None
        where.setdefault(elem, set()).add(env[id(v)])
    seen[id(a)] = where
    return where
