"""``s[C]``: the schedule of one te stage, a thin facade over :class:`mlc.tir.Schedule`.

Each method of :class:`Stage` (``split``, ``tile``, ``fuse``, ``reorder``, ``vectorize``,
``bind``, ``compute_at``, ...) finds the loop handles of its te axes through the schedule
that owns the stage (:class:`mlc.te.schedule.Schedule`, which keeps the table from axes to
loops) and calls the TensorIR primitive of the same name; ``s[C].op`` (:class:`StageOp`)
names the stage's *current* loops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mlc.errors import ScheduleError
from mlc.te.external import describe
from mlc.te.operation import ExternOp, Operation
from mlc.tir.expr import IterKind, IterVar
from mlc.tir.schedule.trace import BlockRV, LoopRV

if TYPE_CHECKING:
    from mlc.te.schedule import Schedule


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
        pending compute_at/compute_inline puts them. A stage computed inline has none: that
        is said by name, not as a loop that vanished."""
        owner = stage or self
        pending = self._s._pending.get(id(owner))
        placed = pending[1] if pending else self._s._applied.get(id(owner), ("root",))
        if placed[0] == "inline":
            name = getattr(getattr(axis, "var", None), "name", axis)
            raise ScheduleError(
                f"stage {owner.name!r} is computed inline (s[{owner.name}].compute_inline()): "
                f"it has no loops of its own, so its axis {name!r} cannot be split, reordered "
                "or annotated. Schedule the axes of the stage that reads it instead"
                + (f", or call s[{owner.name}].compute_root() to keep its loops"
                   if pending else ""))
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

    def tile(self, *args: Any, x_parent: Any = None, y_parent: Any = None,
             x_factor: Any = None, y_factor: Any = None) -> tuple[IterVar, ...]:
        """Split axes and put the outer parts first: ``tile(x, y, fx, fy)`` returns
        ``(x_outer, y_outer, x_inner, y_inner)`` (TVM's, also with its keywords
        ``tile(x, y, x_factor=8, y_factor=8)``); ``tile(x, y, z, fx, fy, fz)``, the lecture
        notes' three-axis form, returns ``(xo, yo, zo, xi, yi, zi)``."""
        named = {"x_parent": x_parent, "y_parent": y_parent, "x_factor": x_factor,
                 "y_factor": y_factor}
        if any(v is not None for v in named.values()):
            given = list(args)
            for key in ("x_parent", "y_parent", "x_factor", "y_factor"):
                if named[key] is not None:
                    order = ("x_parent", "y_parent", "x_factor", "y_factor").index(key)
                    if order < len(given):
                        raise ScheduleError(f"s[{self.name}].tile: {key} given by position "
                                            "and by keyword")
                    if order > len(given):
                        raise ScheduleError(f"s[{self.name}].tile: {key}= given, but not "
                                            "the arguments before it")
                    given.append(named[key])
            args = tuple(given)
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
        self.__dict__.setdefault("_thread_kinds", {})[tag] = ivar.kind

    def set_store_predicate(self, predicate: Any) -> None:
        """TVM's ``s[B].set_store_predicate(tx.var.equal(0))`` for a reduction across the
        threads of ``threadIdx.x`` (``s[B].bind(B.op.reduce_axis[0], tx)``): only thread 0
        stores the result. mlc's cross-thread reduction does exactly that already (the
        threads combine their partial sums in shared memory, then one thread writes), so
        the call checks that this is what is asked and records it."""
        from mlc.tir.expr import EQ, IntImm, Var

        kinds = self.__dict__.get("_thread_kinds", {})
        ok = (isinstance(predicate, EQ) and isinstance(predicate.a, Var)
              and isinstance(predicate.b, IntImm) and predicate.b.value == 0
              and kinds.get(predicate.a.name) == IterKind.REDUCE)
        if not ok:
            bound = [t for t, k in kinds.items() if k == IterKind.REDUCE]
            raise ScheduleError(
                f"s[{self.name}].set_store_predicate({predicate}): mlc takes the predicate of a "
                "cross-thread reduction, thread 0 of the thread axis its reduce axis is bound "
                "to (tx.var.equal(0) after s[B].bind(B.op.reduce_axis[0], tx)); "
                + (f"this stage's reduction runs on {', '.join(bound)}" if bound else
                   "this stage has no reduce axis bound to a thread")
                + ". Other conditions on a store: te.if_then_else in the compute")
        self.store_predicate = predicate

    def pragma(self, var: IterVar, pragma_type: str, pragma_value: Any = 1) -> None:
        """Annotate a loop with ``pragma_<type>`` (e.g. ``"auto_unroll_max_step"``); an
        unknown type is refused, naming the ones mlc knows."""
        from mlc.tir.schedule.loop_annotations import KNOWN_PRAGMAS

        if not isinstance(pragma_type, str) or pragma_type not in KNOWN_PRAGMAS:
            raise ScheduleError(
                f"s[{self.name}].pragma: unknown pragma {pragma_type!r}; mlc knows "
                f"{', '.join(KNOWN_PRAGMAS)} (TVM's unrolling hints). To unroll use "
                f"s[{self.name}].unroll(axis), for threads s[{self.name}].parallel(axis), for "
                f"SIMD s[{self.name}].vectorize(axis)")
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
        refuse_extern(self, "cannot be moved into another stage's loop")
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
        refuse_extern(self, "has no expression to substitute into its consumers")
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


def refuse_extern(stage: Stage, why: str) -> None:
    """A te.extern stage is one opaque call: no loops, no expression."""
    op = stage.origin
    if isinstance(op, ExternOp):
        raise ScheduleError(
            f"s[{stage.name}] is opaque (an extern call: {describe(op)}) and {why}. "
            "Schedule the compute stages around it; the call itself runs as it is"
        )
