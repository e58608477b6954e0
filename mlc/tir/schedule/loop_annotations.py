"""Schedule primitives that set a loop's kind or annotations: ``parallel``, ``vectorize``,
``unroll``, ``bind`` (to a thread axis), ``annotate``, ``unannotate``.

A loop kind must not break a dependence: ``parallel``/``vectorize``/``bind`` refuse a loop
bound to a reduction, and one whose iterations read what others write
(``_check_data_parallel``, :mod:`mlc.tir.schedule.dependence`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mlc.tir.expr import (
    as_int,
)
from mlc.tir.schedule import state
from mlc.tir.schedule.base import ScheduleBase
from mlc.tir.schedule.parallel_check import parallel_conflict
from mlc.tir.schedule.trace import BlockRV, LoopRV
from mlc.tir.stmt import Block, For, ForKind
from mlc.tir.thread_tag import BINDABLE

THREAD_AXES = BINDABLE  # the tags bind accepts (mlc/tir/thread_tag.py)
# ``pragma_<name>`` annotations accepted (TVM's unrolling hints; mlc's LLVM backend unrolls
# on its own judgement, so they change nothing): any other pragma is a typo, refused
KNOWN_PRAGMAS = ("auto_unroll_max_step", "unroll_explicit", "unroll")


class LoopAnnotationPrimitives(ScheduleBase):
    """``parallel``, ``vectorize``, ``unroll``, ``bind``, ``annotate``, ``unannotate``."""

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
        may bind only spatial block variables, and may not contain a parallel or thread-bound
        loop. ``for j in range(8)`` becomes ``for j in vectorized(8)``.

        Loops inside it are allowed, as in TVM: lowering (``vectorize_loops``) keeps them as
        scalar loops with a vector body, ``for k: C[ramp(i0, 1, 8)] += A[ramp(i0*K + k, K,
        8)] * broadcast(B[k])``, when running the lanes side by side provably gives the same
        result (each lane touches only its own elements of what the body writes); otherwise
        it leaves the loop serial, which is correct, only slower (see the lowered program)."""
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
            inner = sub.stmt
            if isinstance(inner, For) and inner.kind in (ForKind.PARALLEL, ForKind.THREAD_BINDING):
                what = "parallel" if inner.kind == ForKind.PARALLEL else "thread-bound"
                raise self._error(
                    f"vectorize: loop {name!r} contains the {what} loop "
                    f"{inner.loop_var.name!r}; the lanes of a vector cannot each run threads. "
                    f"Vectorize a loop inside {inner.loop_var.name!r} instead",
                    {for_: "vectorized", inner: f"{what} loop inside it"},
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
        if ann_key.startswith("pragma_") and ann_key[len("pragma_"):] not in KNOWN_PRAGMAS:
            raise self._error(
                f"annotate: unknown pragma {ann_key[len('pragma_'):]!r} (key {ann_key!r}); "
                f"mlc knows the pragmas {', '.join(KNOWN_PRAGMAS)}, hints it accepts as TVM "
                "does. To unroll use unroll(loop), to run threads parallel(loop), for SIMD "
                "vectorize(loop); an annotation of your own needs a key without 'pragma_'",
                node,
            )
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


    def _set_kind(self, for_: For, kind: ForKind, tag: str | None = None) -> None:
        new = dataclasses.replace(for_, kind=kind, thread_binding=tag)
        self._update(state.replace(self._func, for_, new))

    def _check_data_parallel(self, for_: For, what: str, across_threads: bool = False) -> None:
        """Refuse a loop whose iterations may not run at once: the one check every way a
        loop becomes parallel shares (:func:`mlc.tir.schedule.parallel_check.parallel_conflict`;
        a parsed script's ``T.parallel`` loops meet it too). With ``across_threads`` (a bind to
        threadIdx) a reduce variable of a ``C = C op value`` block is fine: the threads
        combine their parts in a tree reduction in shared memory."""
        params = {p.data for p in self._func.params}
        found = parallel_conflict(for_, what, params, across_threads)
        if found is not None:
            message = found.message
            if found.bare:
                message += (". Keep the loop serial, or write the update as a block with a "
                            "reduce variable and rfactor it")
            raise self._error(message, found.marks)
