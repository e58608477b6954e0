"""Schedule primitives that reshape a loop nest: ``split`` one loop into several, ``fuse``
several into one.

Only the bindings of the blocks under the loops change (see ``loops.py``); a split whose
factors do not divide the extent guards the blocks with a predicate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mlc.errors import ScheduleError
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    FloorDiv,
    FloorMod,
    PrimExpr,
    Range,
    Var,
    as_int,
    const,
)
from mlc.tir.functor import uses_var
from mlc.tir.schedule import state
from mlc.tir.schedule.base import ScheduleBase
from mlc.tir.schedule.loop_helpers import (
    _add_predicate,
    _is_zero,
    _loop_list,
    _product,
    _Rebind,
)
from mlc.tir.schedule.simplify import IndexSimplifier
from mlc.tir.schedule.trace import LoopRV
from mlc.tir.stmt import For, ForKind, Stmt

# the most loops one split makes (sample_perfect_tile's n too)
MAX_SPLIT_FACTORS = 64


class SplitFusePrimitives(ScheduleBase):
    """``split``, ``fuse``."""


    # ----------------------------------------------------------------------------------------
    # split

    def split(
        self,
        loop: LoopRV,
        factors: Sequence[int | PrimExpr | None],
        preserve_unit_iters: bool = True,
    ) -> list[LoopRV]:
        """Split ``loop`` into ``len(factors)`` nested loops, outermost first. One factor may be
        ``None``: it becomes ``ceil(extent / product of the others)``. Before::

            for i in range(10):
                with block("B"):
                    vi = axis.spatial(10, i)

        ``i0, i1 = sch.split(i, factors=[None, 4])``, after::

            for i_0 in range(3):
                for i_1 in range(4):
                    with block("B"):
                        vi = axis.spatial(10, i_0 * 4 + i_1)
                        where(i_0 * 4 + i_1 < 10)     # 4 does not divide 10

        With ``preserve_unit_iters=False`` a factor of 1 gives a loop whose variable is not
        used in the bindings (it is replaced by 0)."""
        for_, loc = self._loop_of(loop)
        name = for_.loop_var.name
        given = list(factors) if isinstance(factors, (list, tuple)) else None
        if not given:
            raise self._error(
                f"split of loop {name!r}: factors must be a non-empty list such as [None, 4], "
                f"got {factors!r}",
                for_,
            )
        if len(given) > MAX_SPLIT_FACTORS:
            raise self._error(
                f"split of loop {name!r} into {len(given)} loops: at most "
                f"{MAX_SPLIT_FACTORS} factors (a deeper nest only adds loops of one "
                "iteration; its index expressions outgrow the simplifier)",
                for_,
            )
        ints: list[int | None] = []
        for f in given:
            if f is None:
                ints.append(None)
                continue
            value = as_int(f) if isinstance(f, PrimExpr) else f
            if isinstance(value, bool) or not isinstance(value, int):
                raise self._error(
                    f"split of loop {name!r}: each factor must be a positive int or None, "
                    f"got {f!r}",
                    for_,
                )
            if value <= 0:
                raise self._error(
                    f"split of loop {name!r}: factors must be positive, got {list(factors)}",
                    for_,
                )
            ints.append(value)
        if ints.count(None) > 1:
            raise self._error(
                f"split of loop {name!r}: at most one factor may be None (inferred), "
                f"got {list(factors)}",
                for_,
            )
        dtype = for_.loop_var.dtype
        extent = for_.extent
        n = as_int(extent)
        known = 1
        for f in ints:
            known *= f if f is not None else 1
        top = 2 ** (dt.bits(dtype) - 1) - 1
        if known > top:  # 10**12 on an int32 loop wrapped: the split computed garbage
            raise self._error(
                f"split of loop {name!r}: the factors {list(factors)} multiply to {known}, "
                f"past what its {dtype} variable can count ({top}); a factor larger than the "
                f"loop{f' ({n} iterations)' if n is not None else ''} adds only iterations "
                "that do nothing",
                for_,
            )
        sizes: list[PrimExpr] = []
        if None in ints:
            if n is not None:
                inferred: PrimExpr = const(-(-n // known), dtype)
            else:
                inferred = self._simplifier()(FloorDiv(extent + (known - 1), const(known, dtype)))
            sizes = [inferred if f is None else const(f, dtype) for f in ints]
        else:
            if n is None:
                raise self._error(
                    f"split of loop {name!r}: its extent {extent} is symbolic, so the factors "
                    f"{ints} cannot be checked to cover it; give one factor as None, e.g. "
                    f"factors=[None, {ints[-1]}]",
                    for_,
                )
            if known < n:
                raise self._error(
                    f"split of loop {name!r}: the factors {ints} multiply to {known}, but the "
                    f"loop has {n} iterations; their product must be at least {n} (or give "
                    "one factor as None to infer it)",
                    for_,
                )
            sizes = [const(f, dtype) for f in ints]  # type: ignore[arg-type]
        exact = n is not None and n == _product(sizes)

        new_vars = [Var(self._fresh(f"{name}_{k}"), dtype) for k in range(len(sizes))]
        combined: PrimExpr | None = None
        for v, size in zip(new_vars, sizes):
            term: PrimExpr = v
            if not preserve_unit_iters and as_int(size) == 1:
                term = const(0, dtype)
            combined = term if combined is None else combined * size + term
        assert combined is not None
        old_value = combined if _is_zero(for_.min) else for_.min + combined

        simp = self._simplifier(loc)
        for v, size in zip(new_vars, sizes):
            simp.bind(v, Range(const(0, dtype), size))
        body = _Rebind({for_.loop_var: old_value}, simp).visit(for_.body)
        if not exact:
            guard = simp(
                old_value < for_.min + extent if not _is_zero(for_.min) else old_value < extent
            )
            body = _add_predicate(body, guard)
        nest: Stmt = body
        for v, size in reversed(list(zip(new_vars, sizes))):
            nest = For(v, const(0, dtype), size, ForKind.SERIAL, nest)
        self._update(state.replace(self._func, for_, nest))
        rvs = [self._loop_rv(v) for v in new_vars]
        self._record(
            "split",
            {"loop": loop, "factors": list(factors), "preserve_unit_iters": preserve_unit_iters},
            rvs,
        )
        return rvs

    # ----------------------------------------------------------------------------------------
    # fuse

    def fuse(self, *loops: LoopRV, preserve_unit_iters: bool = True, **kwargs: Any) -> LoopRV:
        """Fuse a chain of directly nested loops (each the only statement in the one above)
        into one loop. Before::

            for i in range(4):
                for j in range(8):
                    with block("B"):
                        vi = axis.spatial(4, i)
                        vj = axis.spatial(8, j)

        ``ij = sch.fuse(i, j)``, after::

            for i_j_fused in range(32):
                with block("B"):
                    vi = axis.spatial(4, i_j_fused // 8)
                    vj = axis.spatial(8, i_j_fused % 8)

        (A trace replays it as ``sch.fuse(loops=[...])``.)"""
        handles = _loop_list(loops, kwargs, "loops", "fuse")
        if not handles:
            raise ScheduleError("fuse needs at least one loop, e.g. sch.fuse(i, j)")
        fors = [self._loop_of(h)[0] for h in handles]
        names = [f.loop_var.name for f in fors]
        if len({id(f) for f in fors}) != len(fors):
            raise self._error(f"fuse: a loop is given twice in {names}", fors[0])
        for outer, inner in zip(fors, fors[1:]):
            if outer.body is not inner:
                raise self._error(
                    f"fuse: loop {inner.loop_var.name!r} must be the only statement directly "
                    f"inside loop {outer.loop_var.name!r} (loops to fuse are a perfectly "
                    "nested chain, outermost first)",
                    {outer: f"{outer.loop_var.name!r} ...", inner: "... should be right here"},
                )
        fused_vars = {id(f.loop_var) for f in fors}
        for f in fors:
            if not _is_zero(f.min):
                raise self._error(
                    f"fuse: loop {f.loop_var.name!r} starts at {f.min}, not 0; only loops "
                    "starting at 0 can be fused",
                    f,
                )
            if uses_var(f.extent, lambda v: id(v) in fused_vars):
                raise self._error(
                    f"fuse: the extent of loop {f.loop_var.name!r} ({f.extent}) depends on "
                    "another loop being fused, so the fused loop would not be rectangular",
                    f,
                )
        loc = self._get_loop(handles[0])
        dtype = fors[0].loop_var.dtype
        fused = Var(self._fresh("_".join(names) + "_fused"), dtype)
        simp = self._simplifier(loc)
        extent = simp(_product([f.extent for f in fors]))
        total = as_int(extent)
        if total is not None and total > 2 ** (dt.bits(dtype) - 1) - 1:
            raise self._error(  # the fused variable would wrap and compute garbage
                f"fuse: the loops {names} have {total} iterations together, past what a "
                f"{dtype} loop variable can count; fuse fewer of them (or split one first "
                "and fuse the inner parts)",
                fors[0],
            )
        simp.bind(fused, Range(const(0, dtype), extent))
        mapping: dict[Var, PrimExpr] = {}
        stride: PrimExpr = const(1, dtype)
        for k in range(len(fors) - 1, -1, -1):
            f = fors[k]
            value: PrimExpr = fused if k == len(fors) - 1 else FloorDiv(fused, stride)
            if k > 0:
                value = FloorMod(value, f.extent)
            if not preserve_unit_iters and as_int(f.extent) == 1:
                value = const(0, dtype)
            mapping[f.loop_var] = simp(value)
            stride = simp(stride * f.extent)
        body = _Rebind(mapping, simp).visit(fors[-1].body)
        new = For(fused, const(0, dtype), extent, ForKind.SERIAL, body)
        self._update(state.replace(self._func, fors[0], new))
        rv = self._loop_rv(fused)
        self._record(
            "fuse", {"loops": list(handles), "preserve_unit_iters": preserve_unit_iters}, rv
        )
        return rv


    # ----------------------------------------------------------------------------------------
    # helpers

    def _simplifier(self, loc: state.Location | None = None) -> IndexSimplifier:
        simp = IndexSimplifier()
        if loc is not None:
            for node in loc.path:
                if isinstance(node, For):
                    simp.bind(node.loop_var, Range(node.min, node.extent))
        return simp
