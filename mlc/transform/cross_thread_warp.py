"""Warp shuffles for ``lower_cross_thread_reduction`` (the CUDA targets: ``warp_size=32``).

The lanes of a warp read each other's registers (``__shfl_down_sync``), so the steps of a
reduction within a warp need neither shared memory nor a barrier; a reduction over several
warps puts one value per warp in shared memory and the first warp reduces those. See the
pass's module docstring for the rewritten program. :class:`WarpShuffles` is the pass's
mutator's half that plans (:meth:`WarpShuffles._warp_plan`) and writes (``_rewrite_warp``)
it; the shared-memory tree and the helpers both halves call live in the pass's module.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mlc.tir.expr import BufferLoad, Call, IntImm, PrimExpr, Select, Var, const
from mlc.tir.functor import post_order_visit
from mlc.tir.stmt import Block, BlockRealize, Buffer, BufferStore, For, ForKind, Stmt, seq
from mlc.tir.thread_tag import THREAD_AXES
from mlc.transform.cross_thread_common import Reduction, identity, point

if TYPE_CHECKING:
    from mlc.tir.expr import IterVar

SHUFFLE_DTYPES = ("float32", "float64", "int32", "int64")
"""The dtypes a warp shuffle moves (``__shfl_down_sync`` overloads); others use shared memory."""
SHUFFLE = "tvm_warp_shuffle_down"


@dataclass(frozen=True)
class WarpPlan:
    """How one cross-thread reduction maps onto warps."""

    warp_size: int
    width: int                  # lanes per shuffle group: n when n divides the warp, else 32
    warps: int                  # warps one reduction spans (1: no shared memory, no barrier)
    axes: tuple[For, ...]       # the kernel's thread loops, fastest-varying (x) first
    threads: int                # threads of the block that take part (lanes past them skip)


class WarpShuffles:
    """The warp-shuffle rewrite, mixed into the pass's mutator (which provides ``visit``,
    ``_fresh``, ``_slot_vars``, ``_fold``, ``_final`` and its state)."""

    warp_size: int | None
    stack: list[For]
    new_buffers: list[Buffer]
    guarded: int

    if TYPE_CHECKING:
        def visit(self, node: Stmt) -> Stmt: ...
        def _fresh(self, base: str) -> str: ...
        def _slot_vars(self, prefix: str, loops: list[For]) -> list[IterVar]: ...
        def _fold(self, red: Reduction, slot_buf: Buffer, ivs: list[IterVar],
                  slot: tuple[PrimExpr, ...], values: tuple[PrimExpr, ...]) -> Stmt: ...
        def _final(self, red: Reduction, total_buf: Buffer, ivs: list[IterVar],
                   total: tuple[PrimExpr, ...], values: tuple[PrimExpr, ...],
                   thread: PrimExpr) -> BlockRealize: ...

    def _warp_plan(self, red: Reduction) -> WarpPlan | None:
        """How the reduction maps onto warps, or None when the shuffle path does not apply
        (no warps on this target, a dtype shuffles do not move, reductions that straddle
        warps, lanes that would skip the shuffles): then shared memory does it."""
        ws, f = self.warp_size, red.f
        if ws is None or red.dtype not in SHUFFLE_DTYPES or self.guarded:
            return None
        if any(g.thread_binding == f.thread_binding for g in red.others):
            return None
        root = next((g for g in self.stack if g.kind is ForKind.THREAD_BINDING), f)
        kernel = kernel_threads(root)
        if kernel is None:
            return None
        loops = {g.thread_binding: g for g in [*red.others, f]}
        alone = all(e == 1 for t, e in kernel.items() if t != f.thread_binding)
        axes: list[For] = []
        for tag in THREAD_AXES:  # x, y, z: x varies fastest within a warp
            if tag not in kernel:
                continue
            g = loops.get(tag)
            if g is None or not isinstance(g.extent, IntImm):
                return None
            if g.extent.value != kernel[tag] and not (g is f and alone):
                return None  # some rows' lanes skip the reduction (or run it for another row)
            axes.append(g)  # (a lone row may leave the block's last threads out: not named)
        faster = axes[: next(k for k, g in enumerate(axes) if g is f)]
        if any(g.extent.value != 1 for g in faster):  # type: ignore[attr-defined]
            return None  # the reduction's threads are not neighbouring lanes
        n = f.extent.value  # type: ignore[attr-defined]
        threads = 1
        for g in axes:
            threads *= g.extent.value  # type: ignore[attr-defined]
        if n <= ws and ws % n == 0:
            return WarpPlan(ws, n, 1, tuple(axes), threads)
        if threads == n or n % ws == 0:
            return WarpPlan(ws, ws, -(-n // ws), tuple(axes), threads)
        return None  # a reduction of, say, 24 threads next to another: it straddles warps

    def _local(self, base: str, dtype: str) -> Buffer:
        buf = Buffer(self._fresh(base), (const(1, "int32"),), dtype, "local")
        self.new_buffers.append(buf)
        return buf

    def _mask(self, plan: WarpPlan, lane_of: dict[int, PrimExpr]) -> PrimExpr:
        """The lanes of this thread's warp that take part (the block's first
        ``plan.threads`` threads all run every shuffle): all of them but in a last, partial
        warp."""
        ws = plan.warp_size
        dtype = "uint32" if ws <= 32 else "uint64"
        full = const((1 << ws) - 1, dtype)
        rest = plan.threads % ws
        if rest == 0:
            return full
        part = const((1 << rest) - 1, dtype)
        if plan.threads < ws:
            return part
        linear: PrimExpr = const(0, "int32")
        for g in reversed(plan.axes):
            linear = linear * g.extent + lane_of[id(g)]
        return Select(linear < plan.threads - rest, full, part)

    def _rewrite_warp(self, red: Reduction, plan: WarpPlan) -> Stmt:
        f, b, others = red.f, red.block, red.others
        n = f.extent.value  # type: ignore[attr-defined]
        dtype, ws = red.dtype, plan.warp_size
        zero = (const(0, "int32"),)
        name = red.store.buffer.name

        def steps(acc: Buffer, tv: Var, count: int, within_warp: bool) -> list[Stmt]:
            """Shuffle-down steps after which the first lane of each group of ``count``
            lanes (``plan.width`` apart) holds the group's combination of ``acc[0]``."""
            if count <= 1:
                return []
            tmp = self._local(f"{name}_shfl", dtype)
            rel = tv - f.min
            out: list[Stmt] = []
            half = 1
            while half * 2 < count:
                half *= 2
            while half >= 1:
                ivs = self._slot_vars("l", plan_loops)
                lane_of = {id(g): iv.var - g.min for g, iv in zip(plan_loops, ivs)}
                call = Call(dtype, SHUFFLE, (self._mask(plan, lane_of), BufferLoad(acc, zero),
                                             const(half, "int32"),
                                             const(plan.width, "int32")))
                shfl = Block(self._fresh(f"{b.name}_red_shfl{half}"), tuple(ivs),
                             (point(acc, zero),), (point(tmp, zero),),
                             BufferStore(tmp, call, zero))
                out.append(BlockRealize(values(tv), const(True), shfl))
                step = Block(self._fresh(f"{b.name}_red_step{half}"), (),
                             (point(acc, zero), point(tmp, zero)), (point(acc, zero),),
                             BufferStore(acc, red.op(BufferLoad(acc, zero),
                                                     BufferLoad(tmp, zero)), zero))
                if within_warp and plan.width == ws:  # the group is the warp's part of n
                    pred: PrimExpr = rel % ws + half < ws
                    if n % ws:
                        pred = pred & (rel + half < n)
                else:
                    pred = rel + half < count
                out.append(BlockRealize((), pred, step))
                half //= 2
            return out

        plan_loops = list(plan.axes)

        def values(tv: Var) -> tuple[PrimExpr, ...]:
            return tuple(tv if g is f else g.loop_var for g in plan_loops)

        # 1. every thread folds its part into a register, then each warp combines its lanes
        acc = self._local(f"{name}_red", dtype)
        init = BlockRealize((), const(True), Block(
            self._fresh(f"{b.name}_red_init"), (), (), (point(acc, zero),),
            BufferStore(acc, identity(red.op, dtype), zero)))
        fold = self._fold(red, acc, [], zero, ())
        first = [*[self.visit(s) for s in red.items[:-1]], init, fold,
                 *steps(acc, f.loop_var, min(n, plan.width), True)]
        if plan.warps == 1:
            # 2. the first lane writes the total
            first.append(self._final(red, acc, [], zero, (), f.loop_var))
            return dataclasses.replace(f, body=seq(*first))
        # 2. the first lane of each warp puts its warp's value in shared memory ...
        slots = Buffer(self._fresh(f"{name}_red_shared"),
                       (*[g.extent for g in others], const(plan.warps, "int32")), dtype,
                       "shared")
        self.new_buffers.append(slots)
        ivs = self._slot_vars("p", [*others, f])
        slot = (*[iv.var for iv in ivs[:-1]], (ivs[-1].var - f.min) // ws)
        put = Block(self._fresh(f"{b.name}_red_put"), tuple(ivs), (point(acc, zero),),
                    (point(slots, slot),), BufferStore(slots, BufferLoad(acc, zero), slot))
        first.append(BlockRealize((*[g.loop_var for g in others], f.loop_var),
                                  (f.loop_var - f.min) % ws == 0, put))
        # 3. ... and after a barrier the first warp combines those the same way
        tw = Var(self._fresh(f"{f.loop_var.name}_w"), f.loop_var.dtype)
        acc2 = self._local(f"{name}_red", dtype)
        init2 = BlockRealize((), const(True), Block(
            self._fresh(f"{b.name}_red_init"), (), (), (point(acc2, zero),),
            BufferStore(acc2, identity(red.op, dtype), zero)))
        ivs = self._slot_vars("g", [*others, f])
        slot = (*[iv.var for iv in ivs[:-1]], ivs[-1].var - f.min)
        get = Block(self._fresh(f"{b.name}_red_get"), tuple(ivs), (point(slots, slot),),
                    (point(acc2, zero),), BufferStore(acc2, BufferLoad(slots, slot), zero))
        second: list[Stmt] = [
            init2,
            BlockRealize((*[g.loop_var for g in others], tw), tw - f.min < plan.warps, get),
            *steps(acc2, tw, plan.warps, False),
            self._final(red, acc2, [], zero, (), tw),
        ]
        return seq(dataclasses.replace(f, body=seq(*first)),
                   dataclasses.replace(f, loop_var=tw, body=seq(*second)))


def kernel_threads(root: For) -> dict[str, int] | None:
    """The threads per block of the kernel around ``root`` as split_host_device will launch
    it (the largest extent bound to each threadIdx axis); None if one is not a constant."""
    extents: dict[str, int] = {}
    symbolic = False

    def scan(n: object) -> None:
        nonlocal symbolic
        if isinstance(n, For) and n.kind is ForKind.THREAD_BINDING:
            tag = n.thread_binding or ""
            if tag.startswith("threadIdx."):
                if not isinstance(n.extent, IntImm):
                    symbolic = True
                else:
                    extents[tag] = max(extents.get(tag, 0), n.extent.value)

    post_order_visit(root, scan)
    return None if symbolic else extents
