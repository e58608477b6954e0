"""Schedule primitives that move a block into another block's loop nest: ``compute_at`` and
``reverse_compute_at`` (and, through :mod:`inline`, ``compute_inline`` and
``reverse_compute_inline``).

Both moves regenerate the moved block's loops so that they cover exactly the part of the
buffer the other side needs (or produces) in one iteration of the target loop; see
:func:`mlc.tir.schedule.region.relaxed_region` for how that part is found.
"""

from __future__ import annotations

import dataclasses

from mlc.errors import ScheduleError
from mlc.tir.arith import Analyzer
from mlc.tir.expr import IntImm, IterKind, Mul, PrimExpr, Range, Var, const
from mlc.tir.functor import collect, substitute, uses_var
from mlc.tir.schedule import region as R
from mlc.tir.schedule import state
from mlc.tir.schedule.inline import InlinePrimitives
from mlc.tir.schedule.loop_annotations import LoopAnnotationPrimitives
from mlc.tir.schedule.simplify import holds_for_sizes
from mlc.tir.schedule.threads import relaxed_thread_loops
from mlc.tir.schedule.trace import BlockRV, LoopRV
from mlc.tir.stmt import BlockRealize, Buffer, For, ForKind, PrimFunc, Stmt, seq

Bounds = list[tuple[PrimExpr, PrimExpr]]


class ComputeLocationPrimitives(InlinePrimitives, LoopAnnotationPrimitives):
    """``compute_at``, ``reverse_compute_at`` (and the inline primitives)."""

    def compute_at(
        self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False
    ) -> None:
        """Move the producer ``block`` under ``loop`` of its consumer, computing there only
        what the consumers under ``loop`` read in one iteration.

        Before::

            for i in range(128):
                for j in range(128):
                    with block("B"):  B[vi, vj] = A[vi, vj] * 2.0
            for i in range(128):
                for j in range(128):
                    with block("C"):  C[vi, vj] = B[vi, vj] + 1.0

        ``sch.compute_at(sch.get_block("B"), i_of_C)``::

            for i in range(128):
                for ax0 in range(128):
                    with block("B"):
                        vi = axis.spatial(128, i)
                        vj = axis.spatial(128, ax0)
                        B[vi, vj] = A[vi, vj] * 2.0
                for j in range(128):
                    with block("C"):  C[vi, vj] = B[vi, vj] + 1.0

        The producer keeps its reduction loops. Refused when the producer writes a function
        output, when a consumer outside ``loop`` reads what it writes, or when a block between
        the old and the new place touches its buffers.
        """
        realize, bloc = self._block_of(block)
        target, lloc = self._loop_of(loop)
        name, lv = realize.block.name, target.loop_var.name
        infos = R.blocks_in_order(self._func)
        me = R.info_of(infos, realize)
        self._check_movable(me, bloc, target, lloc, "compute_at")
        outputs = me.writes & set(self._func.params)
        if outputs:
            out = sorted(b.name for b in outputs)[0]
            raise self._error(
                f"compute_at: block {name!r} writes {out!r}, an output of the function; moving "
                f"it under loop {lv!r} would compute only the part that loop needs. "
                f"Use cache_write on {name!r} first, then compute_at the cache block.",
                realize,
            )
        scope = bloc.enclosing_block()  # blocks inside a blockized block speak through it
        consumers = [
            i for i in infos
            if i is not me and i.reads & me.writes and i.loc.enclosing_block() is scope
        ]
        under = [c for c in consumers if c.under(target)]
        if not under:
            raise self._error(
                f"compute_at: block {name!r} produces nothing that a block under loop {lv!r} "
                f"reads; pass a loop of one of its consumers "
                f"({[c.block.name for c in consumers] or 'it has none'})",
                target,
            )
        for c in consumers:
            if not c.under(target):
                raise self._error(
                    f"compute_at: block {c.block.name!r}, outside loop {lv!r}, also reads what "
                    f"{name!r} writes; after the move it would see only the part computed for "
                    f"the last iteration. Move {name!r} to a loop that contains every consumer.",
                    c.realize,
                )
        if me.index > under[0].index:
            raise self._error(
                f"compute_at: block {name!r} runs after its consumer {under[0].block.name!r}; "
                "compute_at only moves a producer forward into its consumer's loop",
                realize,
            )
        items = R.body_items(target.body)
        pos = next(k for k, s in enumerate(items) if any(_inside(c, s) for c in under))
        first = min(i.index for i in infos if _inside(i, items[pos]))
        for other in infos:
            if other.loc.enclosing_block() is not scope:
                continue  # inside a blockized block (``me`` itself after blockize): it moves too
            if me.index < other.index < first and R.conflicts(me, other):
                raise self._error(
                    f"compute_at: block {other.block.name!r} runs between {name!r} and loop "
                    f"{lv!r} and uses the same buffers; moving {name!r} past it would change "
                    "what one of them sees",
                    other.realize,
                )
        if len(me.writes) != 1:
            raise self._error(f"compute_at: block {name!r} must write exactly one buffer", realize)
        (buf,) = me.writes
        ana = R.outer_analyzer(lloc)
        threads = relaxed_thread_loops(lloc, buf.scope)
        bounds: Bounds | None = None
        for c in under:
            for r in c.block.reads:
                if r.buffer is buf:
                    relax = R.inner_loops(c.loc, target) + threads
                    rb = R.relaxed_region(r, c.realize, relax, ana)
                    bounds = rb if bounds is None else R.union_bounds(bounds, rb, ana)
        assert bounds is not None  # a consumer reads buf
        mapped = self._iter_dims(realize, buf, bounds, "compute_at")
        nest = self._regenerate(realize, bloc, mapped, ana, preserve_unit_loops, "compute_at")
        new_target = dataclasses.replace(target, body=seq(*items[:pos], nest, *items[pos:]))
        top = R.exclusive_top(bloc)
        new_func = state.replace_many(self._func, {top: None, target: new_target})
        self._check_parallel_loops_around(new_func, lloc, target, name, "compute_at")
        self._update_checking_threads(new_func, "compute_at")
        self._record(
            "compute_at",
            {"block": block, "loop": loop, "preserve_unit_loops": preserve_unit_loops},
            None,
        )

    def reverse_compute_at(
        self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False
    ) -> None:
        """Move the consumer ``block`` under ``loop`` of its producer, right after the
        producer, computing there what the producer finished in one iteration.

        Before (``C_local`` filled by a tiled matmul ``C``)::

            for i0 in range(8):
                for j0 in range(8):
                    for k, i1, j1 in ...:
                        with block("C"): C_local[vi, vj] += ...
            for ax0 in range(64):
                for ax1 in range(64):
                    with block("C_local"): C[v0, v1] = C_local[v0, v1]

        ``sch.reverse_compute_at(sch.get_block("C_local"), j0)``::

            for i0 in range(8):
                for j0 in range(8):
                    for k, i1, j1 in ...:
                        with block("C"): C_local[vi, vj] += ...
                    for ax0 in range(8):
                        for ax1 in range(8):
                            with block("C_local"):
                                v0 = axis.spatial(64, i0 * 8 + ax0)
                                v1 = axis.spatial(64, j0 * 8 + ax1)
                                C[v0, v1] = C_local[v0, v1]

        Refused when the consumer would read data not yet produced (``loop`` lies inside
        the producer's reduction), or when it reads the producer's buffer at anything other
        than its own iteration variables.
        """
        realize, bloc = self._block_of(block)
        target, lloc = self._loop_of(loop)
        name, lv = realize.block.name, target.loop_var.name
        infos = R.blocks_in_order(self._func)
        me = R.info_of(infos, realize)
        self._check_movable(me, bloc, target, lloc, "reverse_compute_at")
        scope = bloc.enclosing_block()  # blocks inside a blockized block speak through it
        producers = [
            i for i in infos
            if i.under(target) and i.writes & me.reads and i.loc.enclosing_block() is scope
        ]
        if not producers:
            raise self._error(
                f"reverse_compute_at: block {name!r} reads nothing that a block under loop "
                f"{lv!r} writes; pass a loop of one of its producers",
                target,
            )
        last = max(i.index for i in infos if i.under(target))
        if me.index < last:
            raise self._error(
                f"reverse_compute_at: block {name!r} runs before loop {lv!r}; "
                "reverse_compute_at only moves a consumer back into its producer's loop",
                realize,
            )
        outer_vars = [f.loop_var for f in lloc.path if isinstance(f, For)] + [target.loop_var]
        for p in producers:
            reduce_values = [
                v
                for iv, v in zip(p.block.iter_vars, p.realize.iter_values)
                if iv.kind is not IterKind.SPATIAL
            ]
            if R.mentions(reduce_values, outer_vars):
                raise self._error(
                    f"reverse_compute_at: loop {lv!r} is inside the reduction of block "
                    f"{p.block.name!r}: its result is complete only after the reduction loops "
                    f"finish, so {name!r} would read data not yet produced. Pick a loop above "
                    "the reduction loops.",
                    target,
                )
        for other in infos:
            if other is me or not (other.under(target) or last < other.index < me.index):
                continue
            if other.loc.enclosing_block() is not scope:
                continue  # inside a blockized block: its outer block speaks for it
            if other in producers:
                bad = me.writes & (other.reads | other.writes)
            else:
                bad = R.conflicts(me, other)
            if bad:
                raise self._error(
                    f"reverse_compute_at: block {other.block.name!r} also uses "
                    f"{sorted(b.name for b in bad)} that {name!r} touches; moving {name!r} "
                    f"into loop {lv!r} would change what one of them sees",
                    other.realize,
                )
        ana = R.outer_analyzer(lloc)
        produced: dict[Buffer, Bounds] = {}
        for p in producers:
            for w in p.block.writes:
                if w.buffer in me.reads:
                    relax = R.inner_loops(p.loc, target) + relaxed_thread_loops(
                        lloc, w.buffer.scope
                    )
                    rb = R.relaxed_region(w, p.realize, relax, ana)
                    old = produced.get(w.buffer)
                    produced[w.buffer] = rb if old is None else R.union_bounds(old, rb, ana)
        mapped: dict[int, tuple[PrimExpr, PrimExpr]] = {}
        for buf, bounds in produced.items():
            for k, b in self._iter_dims_of_read(realize, buf, bounds).items():
                mapped.setdefault(k, b)
        self._check_covers(realize, mapped, lloc, target, producers)
        nest = self._regenerate(
            realize, bloc, mapped, ana, preserve_unit_loops, "reverse_compute_at"
        )
        items = R.body_items(target.body)
        pos = max(k for k, s in enumerate(items) if any(_inside(p, s) for p in producers))
        new_target = dataclasses.replace(
            target, body=seq(*items[: pos + 1], nest, *items[pos + 1 :])
        )
        top = R.exclusive_top(bloc)
        new_func = state.replace_many(self._func, {top: None, target: new_target})
        self._check_parallel_loops_around(new_func, lloc, target, name, "reverse_compute_at")
        self._update_checking_threads(new_func, "reverse_compute_at")
        self._record(
            "reverse_compute_at",
            {"block": block, "loop": loop, "preserve_unit_loops": preserve_unit_loops},
            None,
        )

    # ----------------------------------------------------------------------------------------
    # helpers

    def _check_movable(
        self, me: R.BlockInfo, bloc: state.Location, target: For, lloc: state.Location, what: str
    ) -> None:
        name, lv = me.block.name, target.loop_var.name
        if me.under(target):
            raise self._error(
                f"{what}: block {name!r} is already inside loop {lv!r}; pass a loop of "
                "another block's nest",
                target,
            )
        if bloc.enclosing_block() is not lloc.enclosing_block():
            raise self._error(
                f"{what}: block {name!r} and loop {lv!r} are in different scopes (blocks)",
                target,
            )

    def _check_parallel_loops_around(
        self, func: PrimFunc, lloc: state.Location, target: For, name: str, what: str
    ) -> None:
        """A block moved under a parallel or vectorized loop must be one that
        ``parallel``/``vectorize`` would accept there: a reduction into a buffer every
        iteration shares (``B[vj] += A[vj, k]`` under ``for i in parallel``) would race."""
        loops = [f for f in (*lloc.path, target) if isinstance(f, For)
                 and f.kind in (ForKind.PARALLEL, ForKind.VECTORIZED)]
        old = self._func
        self._func = func  # the checks and their messages read the new program
        try:
            for f in loops:
                kind = "parallel" if f.kind is ForKind.PARALLEL else "vectorize"
                new_loop = state.find_loop(func, f.loop_var)
                assert new_loop is not None
                try:
                    self._check_data_parallel(new_loop.stmt, kind)  # type: ignore[arg-type]
                except ScheduleError as err:
                    raise self._error(
                        f"{what}: moving block {name!r} under the {kind} loop "
                        f"{f.loop_var.name!r} would make it unsafe: "
                        + str(err).split("\n", 1)[0]
                        + f". Move {name!r} under a loop inside it, or make the loop serial",
                        new_loop.stmt,
                    ) from None
        finally:
            self._func = old

    def _check_covers(
        self,
        realize: BlockRealize,
        mapped: dict[int, tuple[PrimExpr, PrimExpr]],
        lloc: state.Location,
        target: For,
        producers: list[R.BlockInfo],
    ) -> None:
        """reverse_compute_at runs the consumer, in each iteration of ``target``, over what
        the producers under it wrote there. Over all iterations that must be every instance
        of the consumer: a consumer that also reads elements another block wrote (``B[vi,
        0]`` from an earlier block, the rest from a running sum under ``target``) would never
        compute those."""
        block = realize.block
        loops = [f for f in lloc.path if isinstance(f, For)] + [target]
        ana = Analyzer()
        for f in loops:
            ana.bind(f.loop_var, Range(f.min, f.extent))
        runs: PrimExpr = const(1, "int64")
        for f in loops:
            if any(R.mentions([lo, hi], [f.loop_var]) for lo, hi in mapped.values()):
                runs = runs * f.extent.astype("int64")
        needed: PrimExpr = const(1, "int64")
        for k, (lo, hi) in mapped.items():
            iv = block.iter_vars[k]
            runs = runs * ana.simplify(hi - lo + 1).astype("int64")
            needed = needed * iv.dom.extent.astype("int64")
            end = ana.simplify(iv.dom.min + iv.dom.extent - 1)
            first, low = ana.const_int_bound(lo)[0], ana.const_int_bound(iv.dom.min)[0]
            last, high = ana.const_int_bound(hi)[1], ana.const_int_bound(end)[1]
            if all(isinstance(x, int) for x in (first, low, last, high)):
                covered = first <= low and last >= high
            else:  # symbolic sizes: the loops at their first and last values
                first = ana.simplify(substitute(lo, {f.loop_var: f.min for f in loops}))
                last = ana.simplify(
                    substitute(hi, {f.loop_var: f.min + f.extent - 1 for f in loops}))
                covered = holds_for_sizes(first <= iv.dom.min, ana) and holds_for_sizes(
                    last >= end, ana)
            if not covered:
                names = ", ".join(repr(p.block.name) for p in producers)
                raise self._error(
                    f"reverse_compute_at: block {block.name!r} needs {iv.var.name} from "
                    f"{iv.dom.min} to {end}, but "
                    f"under loop {target.loop_var.name!r} {names} write only from {first} to "
                    f"{last} of it; the other elements come from elsewhere, and "
                    f"{block.name!r} would never run for them. Leave {block.name!r} where it "
                    "is, or move it under a loop of a nest that "
                    "writes all it reads",
                    realize,
                )
        if not holds_for_sizes(runs >= needed, ana):
            raise self._error(
                f"reverse_compute_at: under loop {target.loop_var.name!r} the producers "
                f"write fewer elements than block {block.name!r} has instances ({needed}); "
                "it would never run for the others. Leave it where it is",
                realize,
            )

    def _iter_dims(
        self, realize: BlockRealize, buf: Buffer, bounds: Bounds, what: str
    ) -> dict[int, tuple[PrimExpr, PrimExpr]]:
        """Producer side: iteration variable k covers dimension d of what it writes."""
        block = realize.block
        (region,) = [w for w in block.writes if w.buffer is buf]
        index = {id(iv.var): k for k, iv in enumerate(block.iter_vars)}
        mapped: dict[int, tuple[PrimExpr, PrimExpr]] = {}
        blockized = bool(collect(block.body, lambda n: isinstance(n, BlockRealize)))
        for d, rng in enumerate(region.region):
            k = index.get(id(rng.min)) if isinstance(rng.min, Var) else None
            if blockized and (k is None or not _is_one(rng.extent)):
                # a blockized block writes a stretch per instance: all of a dimension no
                # variable indexes, or the tile ``v * c : v * c + c`` of one that does
                tile = _tile_of(rng, index)
                if tile == "whole":
                    continue
                if isinstance(tile, tuple) and tile[0] not in mapped:
                    kk, c = tile
                    lo, hi = bounds[d]
                    mapped[kk] = (ana_floordiv(lo, c), ana_floordiv(hi, c))
                    continue
            if k is None or not _is_one(rng.extent) or k in mapped:
                raise self._error(
                    f"{what}: block {block.name!r} writes {buf.name} at `{rng.min}` in "
                    f"dimension {d}; {what} needs each dimension written at one of the "
                    "block's own iteration variables",
                    realize,
                )
            mapped[k] = bounds[d]
        for k, iv in enumerate(block.iter_vars):
            if iv.kind is IterKind.SPATIAL and k not in mapped:
                raise self._error(
                    f"{what}: spatial variable {iv.var.name} of block {block.name!r} indexes "
                    f"no dimension of {buf.name}",
                    realize,
                )
        return mapped

    def _iter_dims_of_read(
        self, realize: BlockRealize, buf: Buffer, bounds: Bounds
    ) -> dict[int, tuple[PrimExpr, PrimExpr]]:
        """Consumer side: which iteration variable reads which dimension of ``buf``."""
        block = realize.block
        index = {id(iv.var): k for k, iv in enumerate(block.iter_vars)}
        mapped: dict[int, tuple[PrimExpr, PrimExpr]] = {}
        ana = Analyzer()
        for region in [r for r in block.reads if r.buffer is buf]:
            for d, rng in enumerate(region.region):
                k = index.get(id(rng.min)) if isinstance(rng.min, Var) else None
                if k is None or not _is_one(rng.extent):
                    raise self._error(
                        f"reverse_compute_at: block {block.name!r} reads {buf.name} at "
                        f"`{rng.min}` in dimension {d}; it must read the produced buffer at "
                        "its own iteration variables (an elementwise consumer)",
                        realize,
                    )
                iv = block.iter_vars[k]
                if iv.kind is not IterKind.SPATIAL:
                    lo, hi = bounds[d]
                    full = ana.can_prove_equal(lo, iv.dom.min) and ana.can_prove_equal(
                        hi, iv.dom.min + iv.dom.extent - 1
                    )
                    if not full:
                        raise self._error(
                            f"reverse_compute_at: block {block.name!r} reduces over "
                            f"{iv.var.name}, but only part of {buf.name} along it is ready "
                            "in one iteration of the loop",
                            realize,
                        )
                    continue
                mapped.setdefault(k, bounds[d])
        return mapped

    def _regenerate(
        self,
        realize: BlockRealize,
        loc: state.Location,
        mapped: dict[int, tuple[PrimExpr, PrimExpr]],
        ana: Analyzer,
        preserve_unit_loops: bool,
        what: str,
    ) -> Stmt:
        """The moved block with new loops ``ax0, ax1...`` over ``mapped`` iteration variables
        (value ``lo + axN``) around its own loops for the other variables."""
        block = realize.block
        values = realize.iter_values
        mapped_values = [values[k] for k in mapped]
        kept_values = [v for k, v in enumerate(values) if k not in mapped]
        kept_loops: list[For] = []
        dropped: list[Var] = []
        # a loop the block shares with other statements stays where it is; when the block's
        # bindings do not use it, it is not regenerated either (a second compute_at deeper
        # into the same consumer would otherwise run the block once more per iteration)
        top = R.exclusive_top(loc)
        own = loc.enclosing_loops()
        start = next((k for k, f in enumerate(own) if f is top), len(own))
        for n, f in enumerate(own):
            if n < start and not R.mentions(list(values), [f.loop_var]):
                continue
            in_mapped = R.mentions(mapped_values, [f.loop_var])
            in_kept = R.mentions(kept_values, [f.loop_var])
            if in_mapped and in_kept:
                raise self._error(
                    f"{what}: loop {f.loop_var.name!r} of block {block.name!r} feeds both the "
                    "variables being moved and the ones that keep their loops; fuse/split "
                    "differently first",
                    f,
                )
            if in_mapped or (not in_kept and _is_one(f.extent)):
                dropped.append(f.loop_var)
            else:
                kept_loops.append(f)
        used = state.names_in_use(self._func)
        used -= {v.name for v in dropped if v.name.startswith("ax")}
        inner = Analyzer()
        inner._ranges.update(ana._ranges)
        new_values = list(values)
        new_loops: list[For] = []
        conds: list[PrimExpr] = []
        for k in sorted(mapped):
            lo, hi = mapped[k]
            iv = block.iter_vars[k]
            extent = ana.simplify(hi - lo + 1)
            if isinstance(extent, IntImm):
                n = extent.value
            else:
                top = ana.const_int_bound(extent)[1]
                if not isinstance(top, int):
                    raise self._error(
                        f"{what}: cannot bound how much of {iv.var.name} block "
                        f"{block.name!r} must cover ({extent})",
                        realize,
                    )
                n = top
            if n == 1 and not preserve_unit_loops:
                value = ana.simplify(lo)
            else:
                ax = Var(state.fresh_name(f"ax{len(new_loops)}", used), iv.var.dtype)
                inner.bind(ax, Range(const(0, ax.dtype), const(n, ax.dtype)))
                zero, size = const(0, ax.dtype), const(n, ax.dtype)
                new_loops.append(For(ax, zero, size, ForKind.SERIAL, None))  # type: ignore[arg-type]
                value = ana.simplify(lo + ax)
                if not isinstance(extent, IntImm):
                    conds.append(ax < extent)
            new_values[k] = value
            if not inner.can_prove(value >= iv.dom.min):
                conds.append(value >= iv.dom.min)
            if not inner.can_prove(value < iv.dom.min + iv.dom.extent):
                conds.append(value < iv.dom.min + iv.dom.extent)
        old_pred = realize.predicate
        if not (isinstance(old_pred, IntImm) and old_pred.value):
            if R.mentions(old_pred, [f.loop_var for f in kept_loops]):
                # a moved loop that was the whole binding of a variable is that variable's
                # new value (`k_0 * 16 + k_1 < m` with vk_1 = k_1 now placed at ax0)
                loop_sub: dict[Var, PrimExpr] = {
                    values[k]: new_values[k]  # type: ignore[misc]
                    for k in mapped
                    if isinstance(values[k], Var) and any(values[k] is v for v in dropped)
                }
                if loop_sub:
                    old_pred = substitute(old_pred, loop_sub)
                if R.mentions(old_pred, dropped):
                    raise self._error(
                        f"{what}: the predicate of block {block.name!r} ({old_pred}) mixes "
                        "moved and kept loops",
                        realize,
                    )
                conds.append(old_pred)
        pred: PrimExpr = const(True)
        for c in conds:
            pred = c if pred is None or _is_true(pred) else pred & c
        body: Stmt = BlockRealize(tuple(new_values), pred, block)
        for f in reversed(kept_loops):
            body = dataclasses.replace(f, body=body)
        for f in reversed(new_loops):
            body = dataclasses.replace(f, body=body)
        return body


def _inside(info: R.BlockInfo, node: Stmt) -> bool:
    return info.realize is node or info.under(node)


def _is_one(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value != 0 and e.dtype == "bool"


def _tile_of(rng: Range, index: dict[int, int]) -> tuple[int, int] | str | None:
    """What a blockized block writes in one dimension: ``"whole"`` when no iteration
    variable indexes it, ``(k, c)`` for the tile ``v_k * c : v_k * c + c``, else None."""
    used = [k for key, k in index.items()
            if uses_var(rng.min, lambda x, key=key: id(x) == key)  # type: ignore[misc]
            or uses_var(rng.extent, lambda x, key=key: id(x) == key)]  # type: ignore[misc]
    if not used:
        return "whole"
    if len(used) != 1 or not isinstance(rng.extent, IntImm):
        return None
    c = rng.extent.value
    e = rng.min
    if isinstance(e, Mul) and isinstance(e.b, IntImm) and e.b.value == c and isinstance(e.a, Var):
        k = index.get(id(e.a))
        return (k, c) if k is not None else None
    if c == 1 and isinstance(e, Var):
        k = index.get(id(e))
        return (k, 1) if k is not None else None
    return None


def ana_floordiv(x: PrimExpr, c: int) -> PrimExpr:
    return Analyzer().simplify(x // c) if c != 1 else x
