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

Each ``s[C]`` is a :class:`mlc.te.stage.Stage`; this module holds the schedule of all of them
(stages, attachments, the axis-to-loop table, ``cache_read``/``cache_write``/``rfactor``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from mlc.errors import ScheduleError
from mlc.te.operation import ComputeOp, ExternOp, Operation, PlaceholderOp, ScanOp, Tensor
from mlc.te.prim_func import check_free_vars, prim_func_of, split_arguments
from mlc.te.stage import Stage, StageOp, refuse_extern
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
        refuse_extern(stage, "has no loops to schedule")
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
