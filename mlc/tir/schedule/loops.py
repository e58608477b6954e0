"""Schedule primitives on loops: split, fuse, reorder, the loop kinds, annotations.

These primitives change *how* the iterations of a block are enumerated, never *which*
iterations run: a block's iteration variables keep their domains and only their bindings
(``iter_values``, expressions of the loop variables) are rewritten. That is why they are
always safe up to two checks: the new loop nest must still visit every point exactly once
(split, fuse, reorder), and a loop kind must not break a dependence (``parallel`` on a
reduction, for example).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from mlc.errors import ScheduleError
from mlc.tir.expr import (
    And,
    FloorDiv,
    FloorMod,
    IntImm,
    IterKind,
    PrimExpr,
    Range,
    Var,
    as_int,
    const,
)
from mlc.tir.functor import IRMutator, substitute, uses_var
from mlc.tir.schedule import state
from mlc.tir.schedule.base import ScheduleBase
from mlc.tir.schedule.simplify import IndexSimplifier
from mlc.tir.schedule.trace import BlockRV, LoopRV
from mlc.tir.stmt import Block, BlockRealize, For, ForKind, Stmt
from mlc.tir.thread_tag import BINDABLE

THREAD_AXES = BINDABLE  # the tags bind accepts (mlc/tir/thread_tag.py)


class _Rebind(IRMutator):
    """Substitute loop variables under a statement, then simplify every binding, predicate
    and loop bound using the ranges of the loops around it."""

    def __init__(self, mapping: dict[Var, PrimExpr], simp: IndexSimplifier) -> None:
        self.mapping = mapping
        self.simp = simp

    def visit_Var(self, v: Var) -> Any:
        return self.mapping.get(v, v)

    def visit_For(self, loop: For) -> Any:
        lo = self.simp(substitute(loop.min, self.mapping))
        ext = self.simp(substitute(loop.extent, self.mapping))
        with self.simp.loop(loop.loop_var, lo, ext):
            body = self.visit(loop.body)
        if lo is loop.min and ext is loop.extent and body is loop.body:
            return loop
        return dataclasses.replace(loop, min=lo, extent=ext, body=body)

    def visit_BlockRealize(self, br: BlockRealize) -> Any:
        values = tuple(self.simp(substitute(v, self.mapping)) for v in br.iter_values)
        pred = self.simp(substitute(br.predicate, self.mapping))
        block = self.visit(br.block)
        return BlockRealize(values, pred, block)


class LoopPrimitives(ScheduleBase):
    """``split``, ``fuse``, ``reorder``, ``parallel``, ``vectorize``, ``unroll``, ``bind``,
    ``annotate``, ``unannotate``."""

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
    # reorder

    def reorder(self, *ordered_loops: LoopRV, **kwargs: Any) -> None:
        """Put the given loops in the given order (outermost first). They must lie in one
        perfectly nested chain; loops of the chain that are not named stay where they are.
        Before::

            for i in range(4):
                for j in range(8):
                    for k in range(16):
                        with block("C"): ...

        ``sch.reorder(k, i)``, after (``j`` was not named and stays in the middle)::

            for k in range(16):
                for j in range(8):
                    for i in range(4):
                        with block("C"): ...

        (A trace replays it as ``sch.reorder(ordered_loops=[...])``.)"""
        handles = _loop_list(ordered_loops, kwargs, "ordered_loops", "reorder")
        if not handles:
            return
        locs = [self._get_loop(h) for h in handles]
        fors: list[For] = [loc.stmt for loc in locs]  # type: ignore[misc]
        names = [f.loop_var.name for f in fors]
        if len({id(f) for f in fors}) != len(fors):
            raise self._error(f"reorder: a loop is given twice in {names}", fors[0])
        by_depth = sorted(locs, key=lambda loc: len(loc.path))
        outer, inner = by_depth[0], by_depth[-1]
        for loc in by_depth:
            if loc is not inner and all(p is not loc.stmt for p in inner.path):
                a, b = loc.stmt.loop_var.name, inner.stmt.loop_var.name  # type: ignore[attr-defined]
                raise self._error(
                    f"reorder: loops {a!r} and {b!r} are not in one loop nest (neither is "
                    "inside the other); only loops of one chain can be reordered",
                    {loc.stmt: f"{a!r}", inner.stmt: f"{b!r}"},
                )
        start = next(k for k, p in enumerate(inner.path) if p is outer.stmt)
        chain: list[Stmt] = [*inner.path[start:], inner.stmt]
        for node, below in zip(chain, chain[1:]):
            if not isinstance(node, For) or node.body is not below:
                what = _describe(node.body) if isinstance(node, For) else _describe(node)
                raise self._error(
                    f"reorder of {names}: the loops are not perfectly nested: there is {what} "
                    "between them. Only loops with nothing but the next loop in their body "
                    "can be reordered (move the other statement out with compute_at, or "
                    "reorder loops inside it)",
                    node,
                )
        chain_fors: list[For] = chain  # type: ignore[assignment]
        chosen = {id(f) for f in fors}
        positions = [k for k, f in enumerate(chain_fors) if id(f) in chosen]
        new_chain = list(chain_fors)
        for pos, f in zip(positions, fors):
            new_chain[pos] = f
        for k, f in enumerate(new_chain):
            inner_vars = {id(g.loop_var) for g in new_chain[k:]}
            if any(
                uses_var(e, lambda v, inner=inner_vars: id(v) in inner)  # type: ignore[misc]
                for e in (f.min, f.extent)
            ):
                raise self._error(
                    f"reorder: the bounds of loop {f.loop_var.name!r} (range({f.min}, "
                    f"{f.min} + {f.extent})) use a loop that would be moved inside it",
                    f,
                )
        self._check_ordered_stays_outside(chain_fors, new_chain)
        body: Stmt = chain_fors[-1].body
        for f in reversed(new_chain):
            body = dataclasses.replace(f, body=body)
        self._update(state.replace(self._func, chain_fors[0], body))
        self._record("reorder", {"ordered_loops": list(handles)}, None)

    def _check_ordered_stays_outside(self, chain: list[For], new_chain: list[For]) -> None:
        """A loop bound to an ordered (scan) variable (a te.scan's time loop) may not move
        inside another loop: the step ``t`` of every column may read any column of step
        ``t - 1``, so every column's step ``t - 1`` must be done first."""
        blocks = [loc.stmt for loc in state.walk(chain[-1].body)
                  if isinstance(loc.stmt, BlockRealize)]  # fmt: skip
        for k, f in enumerate(chain):
            var = f.loop_var
            ordered = [
                (br.block.name, iv.var.name)
                for br in blocks
                for iv, value in zip(br.block.iter_vars, br.iter_values)
                if iv.kind is IterKind.ORDERED and _mentions_var(value, var)
            ]
            if not ordered:
                continue
            before = {id(g) for g in chain[:k]}
            now = new_chain[: next(j for j, g in enumerate(new_chain) if g is f)]
            moved = [g for g in now if id(g) not in before]
            if moved:
                block_name, var_name = ordered[0]
                raise self._error(
                    f"reorder: loop {f.loop_var.name!r} runs the steps of the ordered (scan) "
                    f"variable {var_name} of block {block_name!r} and would move inside "
                    f"{moved[0].loop_var.name!r}; each step may read every element of the "
                    "step before, so the time loop stays outside the loops it was outside "
                    "of (reorder the loops inside it instead)",
                    f,
                )

    # ----------------------------------------------------------------------------------------
    # loop kinds

    def parallel(self, loop: LoopRV) -> None:
        """Run the iterations of ``loop`` on several CPU threads. The loop may bind only
        spatial block variables (a reduction would race) and may not be inside or contain
        another parallel loop. ``for i in range(n)`` becomes ``for i in parallel(n)``."""
        for_, loc = self._loop_of(loop)
        self._check_data_parallel(for_, "parallel")
        name = for_.loop_var.name
        for node in loc.path:
            if isinstance(node, For) and node.kind == ForKind.PARALLEL:
                raise self._error(
                    f"parallel: loop {name!r} is inside the parallel loop "
                    f"{node.loop_var.name!r}; nested parallel loops are not supported "
                    "(parallelize only the outer one, or fuse the two loops first)",
                    {node: "already parallel", for_: "cannot also be parallel"},
                )
        for sub in state.walk(for_.body):
            if isinstance(sub.stmt, For) and sub.stmt.kind == ForKind.PARALLEL:
                raise self._error(
                    f"parallel: loop {name!r} contains the parallel loop "
                    f"{sub.stmt.loop_var.name!r}; nested parallel loops are not supported",
                    {sub.stmt: "already parallel", for_: "cannot also be parallel"},
                )
        self._set_kind(for_, ForKind.PARALLEL)
        self._record("parallel", {"loop": loop}, None)

    def vectorize(self, loop: LoopRV) -> None:
        """Run the iterations of ``loop`` as SIMD lanes. The loop needs a constant extent,
        no loop inside it, and may bind only spatial block variables. ``for j in range(8)``
        becomes ``for j in vectorized(8)``."""
        for_, _ = self._loop_of(loop)
        name = for_.loop_var.name
        if as_int(for_.extent) is None:
            raise self._error(
                f"vectorize: loop {name!r} has the symbolic extent {for_.extent}; a vector "
                "needs a constant number of lanes. Split it first, e.g. "
                f"sch.split({name}, factors=[None, 8]), and vectorize the inner loop",
                for_,
            )
        for sub in state.walk(for_.body):
            if isinstance(sub.stmt, For):
                raise self._error(
                    f"vectorize: loop {name!r} contains the loop {sub.stmt.loop_var.name!r}; "
                    "only an innermost loop can be vectorized (reorder it inwards first)",
                    {for_: "vectorized", sub.stmt: "a loop inside it"},
                )
        self._check_data_parallel(for_, "vectorize")
        self._set_kind(for_, ForKind.VECTORIZED)
        self._record("vectorize", {"loop": loop}, None)

    def unroll(self, loop: LoopRV) -> None:
        """Repeat the body of ``loop`` once per iteration instead of looping:
        ``for k in range(4)`` becomes ``for k in unroll(4)``."""
        for_, _ = self._loop_of(loop)
        self._set_kind(for_, ForKind.UNROLLED)
        self._record("unroll", {"loop": loop}, None)

    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        """Map the iterations of ``loop`` to a GPU thread axis (``"blockIdx.x"``,
        ``"threadIdx.x"``, ...): ``for i in range(n)`` becomes
        ``for i in thread_binding(n, "threadIdx.x")``."""
        tag = getattr(thread_axis, "thread_tag", thread_axis)
        for_, _ = self._loop_of(loop)
        if tag not in THREAD_AXES:
            raise self._error(
                f"bind: {thread_axis!r} is not a thread axis; use one of {', '.join(THREAD_AXES)}",
                for_,
            )
        self._check_data_parallel(for_, f"bind to {tag}", tag.startswith("threadIdx."))
        new = dataclasses.replace(for_, kind=ForKind.THREAD_BINDING, thread_binding=tag)
        self._update_checking_threads(state.replace(self._func, for_, new), f"bind to {tag}")
        self._record("bind", {"loop": loop, "thread_axis": tag}, None)

    # ----------------------------------------------------------------------------------------
    # annotations

    def annotate(self, block_or_loop: BlockRV | LoopRV, ann_key: str, ann_val: Any) -> None:
        """Attach ``ann_key: ann_val`` to a block or loop (e.g. ``"pragma_unroll_explicit"``);
        lowering and codegen read annotations they know and ignore the rest."""
        node = self._annotatable(block_or_loop)
        if not isinstance(ann_key, str):
            raise self._error(f"annotate: the key must be a string, got {ann_key!r}", node)
        if not isinstance(ann_val, (int, float, str, bool)):
            raise self._error(
                f"annotate: the value of {ann_key!r} must be an int, float, str or bool (it "
                f"is stored in the trace as JSON), got {ann_val!r}",
                node,
            )
        anns = tuple((k, v) for k, v in node.annotations if k != ann_key) + ((ann_key, ann_val),)
        self._update(state.replace(self._func, node, dataclasses.replace(node, annotations=anns)))
        self._record(
            "annotate",
            {"block_or_loop": block_or_loop, "ann_key": ann_key, "ann_val": ann_val},
            None,
        )

    def unannotate(self, block_or_loop: BlockRV | LoopRV, ann_key: str) -> None:
        """Remove the annotation ``ann_key`` from a block or loop."""
        node = self._annotatable(block_or_loop)
        if all(k != ann_key for k, _ in node.annotations):
            have = [k for k, _ in node.annotations]
            raise self._error(
                f"unannotate: there is no annotation {ann_key!r} (there are {have})", node
            )
        anns = tuple((k, v) for k, v in node.annotations if k != ann_key)
        self._update(state.replace(self._func, node, dataclasses.replace(node, annotations=anns)))
        self._record("unannotate", {"block_or_loop": block_or_loop, "ann_key": ann_key}, None)

    # ----------------------------------------------------------------------------------------
    # helpers

    def _annotatable(self, block_or_loop: BlockRV | LoopRV) -> For | Block:
        if isinstance(block_or_loop, LoopRV):
            return self._loop_of(block_or_loop)[0]
        return self._get_block(block_or_loop).stmt.block  # type: ignore[attr-defined, no-any-return]

    def _simplifier(self, loc: state.Location | None = None) -> IndexSimplifier:
        simp = IndexSimplifier()
        if loc is not None:
            for node in loc.path:
                if isinstance(node, For):
                    simp.bind(node.loop_var, Range(node.min, node.extent))
        return simp

    def _set_kind(self, for_: For, kind: ForKind, tag: str | None = None) -> None:
        new = dataclasses.replace(for_, kind=kind, thread_binding=tag)
        self._update(state.replace(self._func, for_, new))

    def _check_data_parallel(self, for_: For, what: str, across_threads: bool = False) -> None:
        """Refuse when the loop variable feeds a reduce/ordered block variable, or when a
        reduction block under the loop does not depend on it (every iteration would update
        the same values at once). With ``across_threads`` (a bind to threadIdx) a reduce
        variable of a ``C = C op value`` block is fine: the threads combine their parts in a
        tree reduction in shared memory (``lower_cross_thread_reduction``)."""
        var, name = for_.loop_var, for_.loop_var.name
        # only the outermost blocks: a blockized block speaks for the blocks inside it
        body = for_.body
        outer = [body] if isinstance(body, BlockRealize) else state.child_block_realizes(body)
        for br in outer:
            block = br.block
            depends = False
            for iv, value in zip(block.iter_vars, br.iter_values):
                if not uses_var(value, lambda v: v is var):
                    continue
                depends = True
                if iv.kind is IterKind.REDUCE and across_threads and block.init is not None:
                    continue
                if iv.kind in (IterKind.REDUCE, IterKind.ORDERED):
                    kind = "reduce" if iv.kind == IterKind.REDUCE else "ordered (scan)"
                    raise self._error(
                        f"{what}: the loop {name!r} is bound to the {kind} variable "
                        f"{iv.var.name} of block {block.name!r}; "
                        + (
                            f"a reduction cannot run its steps at once ({what}): they update "
                            "the same element. "
                            + (
                                "Bind it to threadIdx.x instead (the threads of a block then "
                                "combine their parts)"
                                if what.startswith("bind") and block.init is not None
                                else "Use rfactor to make it spatial first"
                            )
                            + ", or choose a loop bound to a spatial variable"
                            if iv.kind == IterKind.REDUCE
                            else "its steps must run one after another. Choose a loop bound "
                            "to a spatial variable"
                        ),
                        {for_: what, br: f"{iv.var.name} is {kind}"},
                    )
            reduces = any(iv.kind != IterKind.SPATIAL for iv in block.iter_vars)
            if reduces and not depends:
                raise self._error(
                    f"{what}: block {block.name!r} under loop {name!r} is a reduction that does "
                    f"not depend on {name!r}, so every iteration would update the same "
                    "elements at once",
                    {for_: what, br: "does not use the loop"},
                )


def _loop_list(
    positional: tuple[Any, ...], kwargs: dict[str, Any], key: str, prim: str
) -> list[LoopRV]:
    extra = set(kwargs) - {key}
    if extra:
        raise ScheduleError(f"{prim}() got unexpected keyword arguments {sorted(extra)}")
    items: list[Any] = list(positional)
    if key in kwargs:
        items += list(kwargs[key])
    if len(items) == 1 and isinstance(items[0], (list, tuple)):
        items = list(items[0])
    for h in items:
        if not isinstance(h, LoopRV):
            raise ScheduleError(f"{prim} takes loop handles (from get_loops/split/fuse), got {h!r}")
    return items


def _block_realizes(node: Stmt) -> list[BlockRealize]:
    return [loc.stmt for loc in state.walk(node) if isinstance(loc.stmt, BlockRealize)]  # type: ignore[misc]


def _add_predicate(body: Stmt, guard: PrimExpr) -> Stmt:
    """AND ``guard`` into the predicate of the block realizes under ``body`` (not those
    inside another block: the outer block's predicate already guards them)."""
    if isinstance(guard, IntImm) and guard.value:
        return body
    targets = state.child_block_realizes(body) if not isinstance(body, BlockRealize) else [body]
    mapping: dict[Stmt, Stmt | None] = {}
    for br in targets:
        pred = br.predicate
        new_pred = guard if isinstance(pred, IntImm) and pred.value else And(pred, guard)
        mapping[br] = BlockRealize(br.iter_values, new_pred, br.block)

    class _Swap(IRMutator):
        def visit(self, node: Any) -> Any:
            if isinstance(node, Stmt) and node in mapping:
                return mapping[node]
            return super().visit(node)

    return _Swap().visit(body)  # type: ignore[no-any-return]


def _product(values: Sequence[PrimExpr]) -> PrimExpr:
    out: PrimExpr | None = None
    for v in values:
        out = v if out is None else out * v
    assert out is not None
    k = [as_int(v) for v in values]
    if all(x is not None for x in k):
        total = 1
        for x in k:
            total *= x  # type: ignore[operator]
        return const(total, values[0].dtype)
    return out


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0


def _describe(node: Stmt) -> str:
    if isinstance(node, BlockRealize):
        return f"the block {node.block.name!r}"
    if isinstance(node, Block):
        return f"the block {node.name!r}"
    kind = type(node).__name__
    return {"SeqStmt": "a sequence of statements", "IfThenElse": "an if statement"}.get(
        kind, f"a {kind}"
    )


def _mentions_var(e: PrimExpr, var: Var) -> bool:
    return uses_var(e, lambda v: v is var)
