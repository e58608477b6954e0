"""The classic te/Halide-style schedule: ``s = te.create_schedule(C.op)``, ``s[C].split(...)``.

This is a thin facade over :class:`mlc.tir.Schedule`: every call below translates to the
TensorIR primitives (one engine, one printer, one trace). A te ``IterVar`` (``C.op.axis[0]``,
or what ``split`` returns) is a *handle to a loop*; the facade keeps the table from axes to
loop handles, so ``s[C].op.axis`` keeps naming the right loops after ``cache_write`` or
``compute_at`` regenerate them (old axes are mapped to the new loops by position)::

    s = te.create_schedule(C.op)
    i, j = s[C].op.axis
    io, jo, ii, ji = s[C].tile(i, j, 32, 32)
    s[C].vectorize(ji)
    print(s.to_prim_func([A, B, C]))      # the same program as s.sch.mod, params in this order
    print(s.sch.trace)                    # the TensorIR primitives it became
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from mlc.errors import ScheduleError
from mlc.te.external import describe
from mlc.te.operation import ComputeOp, ExternOp, Operation, PlaceholderOp, ScanOp, Tensor
from mlc.te.prim_func import check_free_vars, prim_func_of, split_arguments
from mlc.tir.expr import IterKind, IterVar, Range, Var
from mlc.tir.schedule import state
from mlc.tir.schedule.schedule import Schedule as TirSchedule
from mlc.tir.schedule.trace import BlockRV, LoopRV
from mlc.tir.stmt import For, PrimFunc

# Where a stage is computed: ("at", parent stage, axis), ("inline",) or ("root",).
Attachment = tuple[Any, ...]


def _topo_ops(outputs: Sequence[Operation]) -> list[Operation]:
    order: list[Operation] = []
    seen: set[int] = set()

    def visit(op: Operation) -> None:
        if id(op) in seen:
            return
        seen.add(id(op))
        for t in op.input_tensors:
            visit(t.op)
        order.append(op)

    for op in outputs:
        visit(op)
    return order


class CacheOp(Operation):
    """The operation of a tensor made by ``cache_read``/``cache_write``/``rfactor``: it only
    names a stage (its axes are handles to the loops of the new block)."""

    def __init__(
        self,
        name: str,
        source: Tensor,
        axis: tuple[IterVar, ...],
        reduce_axis: tuple[IterVar, ...] = (),
    ) -> None:
        self.name = name
        self.attrs = {}
        self.axis = axis
        self.reduce_axis = reduce_axis
        self._source = source
        self._output = Tensor(self, source.shape, source.dtype, name)

    @property
    def input_tensors(self) -> list[Tensor]:
        return [self._source]


class StageOp:
    """``s[C].op``: the stage's operation, with the axes that name its *current* loops."""

    def __init__(self, stage: Stage) -> None:
        self._stage = stage

    @property
    def axis(self) -> tuple[IterVar, ...]:
        self._stage._s._flush(self._stage)
        return tuple(self._stage.axis)

    @property
    def reduce_axis(self) -> tuple[IterVar, ...]:
        self._stage._s._flush(self._stage)
        return tuple(self._stage.reduce_axis)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stage.origin, name)

    def __repr__(self) -> str:
        return f"StageOp({self._stage.name!r})"


class Stage:
    """The schedule of one operation (one block of the loop program): ``s[C]``."""

    def __init__(
        self,
        sch: Schedule,
        origin: Operation,
        block_name: str,
        axis: Sequence[IterVar],
        reduce_axis: Sequence[IterVar],
    ) -> None:
        self._s = sch
        self.origin = origin
        self.block_name = block_name
        self.axis = list(axis)
        self.reduce_axis = list(reduce_axis)

    @property
    def name(self) -> str:
        return self.origin.name

    @property
    def op(self) -> StageOp:
        return StageOp(self)

    def _loop(self, axis: Any, stage: Stage | None = None) -> LoopRV:
        """The loop handle of ``axis``, after placing this stage (and ``stage``) where a
        pending compute_at/compute_inline puts them."""
        self._s._flush(self)
        if stage is not None and stage is not self:
            self._s._flush(stage)
        return self._s._loop(axis, stage or self)

    @property
    def block(self) -> BlockRV:
        return self._s._tir.get_block(self.block_name)

    def __repr__(self) -> str:
        return f"stage({self.name!r}, block={self.block_name!r})"

    # -- loops ----------------------------------------------------------------------------
    def split(
        self, parent: IterVar, factor: int | None = None, nparts: int | None = None
    ) -> tuple[IterVar, IterVar]:
        """Split ``parent`` into ``(outer, inner)``: ``factor`` is the inner extent, or
        ``nparts`` the outer one (give exactly one). ``tir``: ``sch.split(l, [None, factor])``."""
        if (factor is None) == (nparts is None):
            raise ScheduleError(
                f"s[{self.name}].split({parent.var.name}): give exactly one of factor= "
                f"(inner extent) or nparts= (outer extent)"
            )
        loop = self._loop(parent)
        factors = [None, factor] if factor is not None else [nparts, None]
        outer, inner = self._s._tir.split(loop, factors=factors)
        return self._s._axis_for(outer, parent.kind), self._s._axis_for(inner, parent.kind)

    def tile(self, *args: Any) -> tuple[IterVar, ...]:
        """Split axes and put the outer parts first: ``tile(x, y, fx, fy)`` returns
        ``(x_outer, y_outer, x_inner, y_inner)`` (TVM's); ``tile(x, y, z, fx, fy, fz)``, the
        lecture notes' three-axis form, returns ``(xo, yo, zo, xi, yi, zi)``."""
        if len(args) not in (4, 6):
            raise ScheduleError(
                f"s[{self.name}].tile takes two axes and two factors, or three and three; "
                f"got {len(args)} arguments"
            )
        half = len(args) // 2
        pairs = [self.split(ax, factor=f) for ax, f in zip(args[:half], args[half:])]
        outer, inner = [p[0] for p in pairs], [p[1] for p in pairs]
        self.reorder(*outer, *inner)
        return (*outer, *inner)

    def fuse(self, *args: IterVar) -> IterVar:
        """Fuse directly nested axes (outermost first) into one."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        loops = [self._loop(a) for a in args]
        kind = IterKind.REDUCE if any(a.kind == IterKind.REDUCE for a in args) else IterKind.SPATIAL
        return self._s._axis_for(self._s._tir.fuse(*loops), kind)

    def reorder(self, *args: IterVar) -> None:
        """Put the given axes in this order (outermost first)."""
        self._s._tir.reorder(*[self._loop(a) for a in args])

    def vectorize(self, var: IterVar) -> None:
        self._s._tir.vectorize(self._loop(var))

    def unroll(self, var: IterVar) -> None:
        self._s._tir.unroll(self._loop(var))

    def parallel(self, var: IterVar) -> None:
        self._s._tir.parallel(self._loop(var))

    def tensorize(self, var: IterVar, tensor_intrin: Any) -> None:
        """Replace the tile under ``var`` by a tensor intrinsic (``te.decl_tensor_intrin`` or
        a registered name); the stage then names the tensorized block. ``tir``:
        ``sch.tensorize(loop, intrin)``."""
        blk = self._s._tir.tensorize(self._loop(var), tensor_intrin)
        self.block_name = self._s._tir._block_name(blk)
        self._s._refresh(self)

    def bind(self, ivar: IterVar, thread_ivar: Any) -> None:
        """Bind an axis to a GPU thread axis: ``s[C].bind(bx, te.thread_axis("blockIdx.x"))``."""
        tag = getattr(thread_ivar, "thread_tag", thread_ivar)
        self._s._tir.bind(self._loop(ivar), tag)

    def pragma(self, var: IterVar, pragma_type: str, pragma_value: Any = 1) -> None:
        """Annotate a loop with ``pragma_<type>`` (e.g. ``"auto_unroll_max_step"``)."""
        self._s._tir.annotate(self._loop(var), "pragma_" + pragma_type, pragma_value)

    # -- where the stage is computed -----------------------------------------------------------
    # As in TVM, these three are declarative: they say where the stage is computed, the last
    # call wins, and the order of the calls across stages does not matter. They take effect
    # when the schedule is lowered or built, or earlier when the stage's loops are used (a
    # split of s[B] after s[B].compute_at(...) splits the loops under the attach point).

    def compute_at(self, parent: Stage, scope: IterVar) -> None:
        """Compute this stage inside loop ``scope`` of stage ``parent`` (only the part that
        one iteration of ``scope`` needs). ``tir``: ``sch.compute_at(block, loop)``.

        A chain of stages may be attached in any order: with ``Y`` reading ``sm`` reading
        ``e`` reading ``mx``, ``s[mx].compute_at(s[Y], i)`` may come first although ``mx``
        is only needed under ``i`` once ``e`` is there."""
        if not isinstance(parent, Stage):
            raise ScheduleError(
                f"s[{self.name}].compute_at(parent, axis): parent must be a stage, s[T]"
            )
        _refuse_extern(self, "cannot be moved into another stage's loop")
        if parent is self:
            raise ScheduleError(
                f"s[{self.name}].compute_at(s[{self.name}], ...): a stage cannot be computed "
                "inside its own loops; pass a consumer's stage and one of its axes, e.g. "
                f"s[{self.name}].compute_at(s[C], C.op.axis[0])"
            )
        self._s._loop(scope, parent)  # a typo in the axis is reported here, not at build
        self._s._attach(self, ("at", parent, scope))

    def compute_inline(self) -> None:
        """Substitute this stage's expression into its consumers (no buffer, no loops)."""
        _refuse_extern(self, "has no expression to substitute into its consumers")
        self._s._attach(self, ("inline",))

    def compute_root(self) -> None:
        """Compute the stage at the root of the program (where it starts out): undoes a
        compute_at or compute_inline given earlier for this stage."""
        self._s._attach(self, ("root",))

    def set_scope(self, scope: str) -> None:
        """Keep this stage's output in memory ``scope``: ``"shared"`` (one copy per GPU thread
        block, filled cooperatively, with barriers), ``"local"`` (per thread), ``"global"``."""
        self._s._flush(self)
        self._s._tir.set_scope(self.block, 0, scope)

    def storage_align(self, axis: IterVar, factor: int, offset: int) -> None:
        """Pad the stride of the buffer dimension of ``axis`` to ``k * factor + offset``
        elements (avoids shared-memory bank conflicts)."""
        self._s._flush(self)
        dims = [k for k, a in enumerate(self.axis) if a is axis]
        if not dims:
            raise ScheduleError(
                f"s[{self.name}].storage_align: {axis.var.name} is not one of the stage's "
                f"original axes {[a.var.name for a in self.axis]}"
            )
        self._s._tir.storage_align(self.block, 0, dims[0], factor, offset)


class Schedule:
    """``te.create_schedule(outs)``: the stages of every operation the outputs need."""

    def __init__(self, ops: Sequence[Operation]) -> None:
        self.outputs = list(ops)
        order = _topo_ops(self.outputs)
        self._placeholders = [op.output(0) for op in order if isinstance(op, PlaceholderOp)]
        self._args = self._placeholders + [
            t for op in self.outputs for t in getattr(op, "outputs", [op.output(0)])
        ]
        self.func = prim_func_of(self._args)
        self._tir = TirSchedule(self.func)
        self._loops: dict[int, LoopRV] = {}
        self._keep: list[IterVar] = []  # axes made here, kept alive (ids are table keys)
        self._stages: dict[int, Stage] = {}
        self.stages: list[Stage] = []
        # compute_at/compute_inline not applied yet: stage id -> (stage, attachment)
        self._pending: dict[int, tuple[Stage, Attachment]] = {}
        self._flushing: set[int] = set()  # stages whose _flush is running (a cycle guard)
        self._applied: dict[int, Attachment] = {}  # stage id -> the attachment in effect
        for op in order:
            if isinstance(op, (ComputeOp, ScanOp, ExternOp)):
                name = self._block_writing(op.output(0))
                self._add_stage(op, name)
            if isinstance(op, ScanOp):
                # TVM schedules a scan through its init and update: s[s_init], s[s_update]
                # (the update's first axis is the time loop)
                self._add_stage(op.init.op, self._block_writing(op.output(0), first=True))
                self._add_stage(op.update.op, name)
                for body_op in op.body_ops:  # a multi-stage scan's inner computations
                    self._add_stage(body_op, self._block_writing(body_op.output(0)))

    def _add_stage(self, op: Operation, name: str) -> None:
        compute: Any = op  # a compute (or a scan's init/update): it has axes
        stage = Stage(self, op, name, compute.axis, compute.reduce_axis)
        self._register(stage, op)
        loops = self._tir.get_loops(self._tir.get_block(name))
        by_var = {id(self._tir._loop_var(lp)): lp for lp in loops}
        for a in [*compute.axis, *compute.reduce_axis]:
            if id(a.var) in by_var:
                self._loops[id(a)] = by_var[id(a.var)]

    @property
    def sch(self) -> TirSchedule:
        """The TensorIR schedule underneath, with every compute_at/compute_inline applied."""
        self._resolve()
        return self._tir

    # -- attachments (compute_at / compute_inline / compute_root) -------------------------------
    def _attach(self, stage: Stage, attachment: Attachment) -> None:
        applied = self._applied.get(id(stage), ("root",))
        if attachment[0] == "root" and applied[0] != "root":
            raise ScheduleError(
                f"s[{stage.name}].compute_root(): the stage was already placed by "
                f"{'compute_inline' if applied[0] == 'inline' else 'compute_at'}, because its "
                "loops were used after that call (a split, an axis lookup...). Call "
                "compute_root before using them, or rebuild the schedule without that call."
            )
        if applied[0] != "root":
            raise ScheduleError(
                f"s[{stage.name}]: the stage was already placed by an earlier compute_at or "
                "compute_inline whose loops were used since; it cannot be moved again"
            )
        if attachment[0] == "root":
            self._pending.pop(id(stage), None)
        else:
            self._pending[id(stage)] = (stage, attachment)

    def _flush(self, stage: Stage) -> bool:
        """Apply ``stage``'s pending attachment if it can be applied now; True when nothing
        is left pending for it."""
        item = self._pending.get(id(stage))
        if item is None:
            return True
        if id(stage) in self._flushing:
            return False  # attachments that wait on each other (B at C's loop, C at B's)
        self._flushing.add(id(stage))
        try:
            return self._flush_now(stage, item)
        finally:
            self._flushing.discard(id(stage))

    def _flush_now(self, stage: Stage, item: tuple[Stage, Attachment]) -> bool:
        # consumers first: a stage attached into a loop its pending consumer will occupy
        # (C read by D, both at s[O]'s loop) can only move there once the consumer has
        for other, _ in list(self._pending.values()):
            if other is not stage and self._reads_output_of(other, stage):
                self._flush(other)
        try:
            self._apply(stage, item[1])
        except ScheduleError:
            return False
        return True

    def _reads_output_of(self, consumer: Stage, producer: Stage) -> bool:
        def block(st: Stage) -> Any:
            return self._tir._get_block(st.block_name).stmt.block  # type: ignore[attr-defined]

        written = {id(w.buffer) for w in block(producer).writes}
        return any(id(r.buffer) in written for r in block(consumer).reads)

    def _apply(self, stage: Stage, attachment: Attachment) -> None:
        if attachment[0] == "at":
            parent, scope = attachment[1], attachment[2]
            self._flush(parent)
            target = self._loop(scope, parent)
            self._tir.compute_at(stage.block, target, preserve_unit_loops=True)
            del self._pending[id(stage)]
            self._applied[id(stage)] = attachment
            self._refresh(stage, after=self._tir._loop_var(target))
        else:
            self._tir.compute_inline(stage.block)
            del self._pending[id(stage)]
            self._applied[id(stage)] = attachment
            stage.axis, stage.reduce_axis = [], []

    def _resolve(self) -> None:
        """Apply every pending attachment, consumers before producers, retrying until none
        is left; a ScheduleError names the call that cannot be applied."""
        while self._pending:
            progress = False
            last: tuple[Stage, Attachment, ScheduleError] | None = None
            order = sorted(
                self._pending.values(),
                key=lambda item: -next(
                    (k for k, st in enumerate(self.stages) if st is item[0]), 0
                ),
            )
            for stage, attachment in order:
                try:
                    self._apply(stage, attachment)
                    progress = True
                except ScheduleError as err:
                    last = (stage, attachment, err)
            if not progress and last is not None:
                stage, attachment, cause = last
                call = (
                    f"s[{stage.name}].compute_at(s[{attachment[1].name}], "
                    f"{attachment[2].var.name})"
                    if attachment[0] == "at"
                    else f"s[{stage.name}].compute_inline()"
                )
                raise ScheduleError(f"{call} cannot be applied: {cause}") from cause

    # -- stages -------------------------------------------------------------------------------
    def __getitem__(self, key: Tensor | Operation | StageOp) -> Stage:
        if isinstance(key, StageOp):
            return key._stage
        op = key.op if isinstance(key, Tensor) else key
        if isinstance(op, PlaceholderOp):
            raise ScheduleError(
                f"{op.name!r} is a placeholder (an input): it has no loops to schedule"
            )
        if id(op) not in self._stages:
            raise ScheduleError(
                f"{op.name!r} is not part of this schedule (create_schedule was given "
                f"{[o.name for o in self.outputs]})"
            )
        return self._stages[id(op)]

    def _register(self, stage: Stage, op: Operation) -> None:
        self._stages[id(op)] = stage
        if all(s is not stage for s in self.stages):
            self.stages.append(stage)

    def _block_writing(self, t: Tensor, first: bool = False) -> str:
        found = [
            loc.stmt.block.name  # type: ignore[attr-defined]
            for loc in state.all_blocks(self._tir.mod)
            if any(w.buffer is t.buffer for w in loc.stmt.block.writes)  # type: ignore[attr-defined]
        ]
        if not found:
            raise ScheduleError(f"no block computes {t.name!r}")
        return found[0] if first else found[-1]

    # -- axes <-> loops -----------------------------------------------------------------------
    def _loop(self, axis: Any, stage: Stage) -> LoopRV:
        _refuse_extern(stage, "has no loops to schedule")
        if isinstance(axis, LoopRV):
            return axis
        if not isinstance(axis, IterVar) or id(axis) not in self._loops:
            name = getattr(getattr(axis, "var", None), "name", repr(axis))
            raise ScheduleError(
                f"s[{stage.name}]: {name} is not an axis of this schedule; use "
                f"s[{stage.name}].op.axis, .op.reduce_axis or what split/fuse returned"
            )
        loop = self._loops[id(axis)]
        try:
            var = self._tir._loop_var(loop)
            around = {id(self._tir._loop_var(rv)) for rv in self._tir.get_loops(stage.block)}
        except ScheduleError:
            return loop  # a loop a primitive replaced: the primitive that uses it says so
        if id(var) not in around:
            raise ScheduleError(
                f"s[{stage.name}]: {axis.var.name} is not a loop around stage "
                f"{stage.name!r} (it belongs to another stage); use s[{stage.name}].op.axis, "
                f".op.reduce_axis or what s[{stage.name}].split/fuse returned"
            )
        return loop

    def _axis_for(self, loop: LoopRV, kind: IterKind) -> IterVar:
        for_: For = self._tir._get_loop(loop).stmt  # type: ignore[assignment]
        iv = IterVar(for_.loop_var, Range(for_.min, for_.extent), kind)
        self._loops[id(iv)] = loop
        self._keep.append(iv)
        return iv

    def _refresh(self, stage: Stage, after: Var | None = None) -> None:
        """Map the stage's axes to the current loops of its block by position (loops below
        ``after`` only, when given); make new axes when the counts differ."""
        loops = self._tir.get_loops(self._tir.get_block(stage.block_name))
        if after is not None:
            idx = [k for k, lp in enumerate(loops) if self._tir._loop_var(lp) is after]
            loops = loops[idx[0] + 1 :] if idx else loops
        realize = self._tir._get_block(stage.block_name).stmt
        reduce_vars = [
            v
            for iv, v in zip(realize.block.iter_vars, realize.iter_values)  # type: ignore[attr-defined]
            if iv.kind != IterKind.SPATIAL
        ]
        from mlc.tir.functor import uses_var

        spatial, reduce = [], []
        for lp in loops:
            var = self._tir._loop_var(lp)
            if any(uses_var(v, lambda x, var=var: x is var) for v in reduce_vars):  # type: ignore[misc]
                reduce.append(lp)
            else:
                spatial.append(lp)
        for old, new, kind in (
            (stage.axis, spatial, IterKind.SPATIAL),
            (stage.reduce_axis, reduce, IterKind.REDUCE),
        ):
            if len(old) == len(new):
                for a, lp in zip(old, new):
                    self._loops[id(a)] = lp
            else:
                old[:] = [self._axis_for(lp, kind) for lp in new]

    # -- new stages ---------------------------------------------------------------------------
    def _new_stage(self, block: BlockRV, source: Tensor) -> Tensor:
        name = self._tir._block_name(block)
        op = CacheOp(name, source, ())
        stage = Stage(self, op, name, [], [])
        self._register(stage, op)
        self._refresh(stage)
        op.axis, op.reduce_axis = tuple(stage.axis), tuple(stage.reduce_axis)
        return op.output(0)

    def cache_read(self, tensor: Tensor, scope: str, readers: Sequence[Any]) -> Tensor:
        """A copy of ``tensor`` in ``scope`` that ``readers`` read instead of it. Returns the
        cache tensor; schedule it with ``s[AA]``."""
        self._resolve()
        stages = [
            self[r]
            for r in cast("list[Any]", readers if isinstance(readers, (list, tuple)) else [readers])
        ]
        if not stages:
            raise ScheduleError("cache_read needs at least one reader")
        first = self._tir._get_block(stages[0].block_name).stmt.block  # type: ignore[attr-defined]
        index = [k for k, r in enumerate(first.reads) if r.buffer is tensor.buffer]
        if not index:
            raise ScheduleError(f"{stages[0].name!r} does not read {tensor.name!r}")
        block = self._tir.cache_read(
            stages[0].block, index[0], scope, consumer_blocks=[s.block for s in stages]
        )
        return self._new_stage(block, tensor)

    def cache_write(self, tensor: Tensor, scope: str) -> Tensor:
        """Compute ``tensor`` into a cache in ``scope`` and copy it out. Returns the cache
        tensor ``CC`` (the computation, ``s[CC]``); ``s[C]`` becomes the copy, and
        ``C.op.axis`` now names the copy's loops."""
        self._resolve()
        stage = self[tensor]
        block = self._tir.cache_write(stage.block, 0, scope)
        copy_name = self._tir._block_name(block)
        # the computation keeps its loops and moves to a new stage with the reduce axes
        comp_op = CacheOp(copy_name, tensor, (), tuple(stage.reduce_axis))
        comp = Stage(self, comp_op, stage.block_name, [], stage.reduce_axis)
        comp.axis = [self._axis_for(self._loop(a, stage), IterKind.SPATIAL) for a in stage.axis]
        comp_op.axis = tuple(comp.axis)
        self._register(comp, comp_op)
        stage.block_name, stage.reduce_axis = copy_name, []
        self._refresh(stage)
        return comp_op.output(0)

    def rfactor(self, tensor: Tensor, axis: IterVar, factor_axis: int = 0) -> Tensor:
        """Factor the reduction of ``tensor`` over ``axis`` into a new stage whose output has
        ``axis`` as a spatial dimension; ``s[tensor]`` then reduces over it."""
        self._resolve()
        stage = self[tensor]
        block = self._tir.rfactor(self._loop(axis, stage), factor_axis)
        out = self._new_stage(block, tensor)
        self._refresh(stage)
        return out

    # -- the program --------------------------------------------------------------------------
    def to_prim_func(self, args: Sequence[Tensor | Var], name: str = "main") -> PrimFunc:
        """The scheduled program with parameters in the order of ``args``; a variable in
        ``args`` (``te.var("bias", "float32")``) is a scalar parameter."""
        func = self.sch.mod
        params = []
        for t in args:
            if isinstance(t, Var):
                continue  # a scalar: split_arguments below
            buf = getattr(t, "buffer", None)
            if buf is not None and not any(buf is p for p in func.params):
                func = _intermediate_as_param(func, buf)
            if not any(buf is p for p in func.params):
                have = [p.name for p in func.params]
                raise ScheduleError(
                    f"{getattr(t, 'name', t)!r} is not an input or output of this schedule "
                    f"(those are {have}); intermediate tensors cannot be arguments (a "
                    "scalar parameter is a te.var)"
                )
            params.append(buf)
        missing = [p.name for p in func.params if all(p is not b for b in params)]
        if missing:
            raise ScheduleError(f"the arguments leave out {missing}; list every input and output")
        _, scalars = split_arguments(list(args), "mlc.build")
        out = PrimFunc(tuple(params), func.body, name, func.attrs, scalars)  # type: ignore[arg-type]
        check_free_vars(out, "mlc.build")
        return out

    def __repr__(self) -> str:
        return repr(self.sch.mod)


def _refuse_extern(stage: Stage, why: str) -> None:
    """A te.extern stage is one opaque call: no loops, no expression."""
    op = stage.origin
    if isinstance(op, ExternOp):
        raise ScheduleError(
            f"s[{stage.name}] is opaque (an extern call: {describe(op)}) and {why}. "
            "Schedule the compute stages around it; the call itself runs as it is"
        )


def _intermediate_as_param(func: PrimFunc, buf: Any) -> PrimFunc:
    """``func`` with the intermediate buffer ``buf`` (allocated by the root block) turned
    into a parameter, so the caller's array receives its values, as TVM allows."""
    import dataclasses

    from mlc.tir.stmt import BlockRealize

    body = func.body
    if not isinstance(body, BlockRealize) or all(b is not buf for b in body.block.alloc_buffers):
        return func
    root = dataclasses.replace(
        body.block, alloc_buffers=tuple(b for b in body.block.alloc_buffers if b is not buf)
    )
    new_body = dataclasses.replace(body, block=root)
    return dataclasses.replace(func, params=(*func.params, buf), body=new_body)


def create_schedule(ops: Operation | Tensor | Sequence[Operation | Tensor]) -> Schedule:
    """A schedule for the operations that compute ``ops`` (an op, a tensor, or a list)."""
    items = cast("list[Operation | Tensor]", list(ops) if isinstance(ops, (list, tuple)) else [ops])
    return Schedule([t.op if isinstance(t, Tensor) else t for t in items])
