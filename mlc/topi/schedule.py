"""Default CPU schedules, written with the TensorIR primitives of ``tir.Schedule``.

``default_schedule(tensors)`` schedules the computation of ``tensors`` (placeholders first,
outputs last) and returns the ``tir.Schedule``; ``schedule_group`` does the same for a fused
graph group. The recipe, for a group such as ``relu(dense(x, w) + b)``:

1. inline every elementwise/injective stage that is not the output (``bias_add``, a conv's
   padding): ``compute_inline``;
2. tile the OUTPUT's loops: rows by ``rows`` (unrolled), columns by a vector width ``vec``;
3. ``compute_at`` the anchor (the dense/conv reduction) under the output's column-tile loop,
   so each tile of accumulators is computed and immediately consumed by the epilogue;
4. inside the anchor: reduction loop outside the tile, the vector loop innermost, the init
   split off before the reduction (``decompose_reduction``);
5. ``parallel`` on the outermost loop when the kernel has enough work to pay for threads.

Before (dense + bias + relu, 64x32 output)::

    for i, j, k in grid(64, 32, 64):  dense[i, j] += x[i, k] * w[j, k]
    for i, j in grid(64, 32):         relu[i, j] = max(dense[i, j] + b[j], 0)

After::

    for i_0 in parallel(16):
        for j_0 in range(2):
            for ax0, ax1 in grid(4, 16):          dense[...] = 0.0
            for k in range(64):
                for ax0 in unroll(4):
                    for ax1 in vectorized(16):    dense[...] += x[...] * w[...]
            for i_1 in unroll(4):
                for j_1 in vectorized(16):        relu[...] = max(dense[...] + b[...], 0)

Each step is tried in order; if the schedule refuses one (a ScheduleError: an unusual shape),
the kernel is rebuilt with only the steps that worked before it, so a default schedule never
makes a kernel wrong or fail to build.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from mlc import te, tir
from mlc.errors import MLCError
from mlc.tir.expr import as_int

#: kernels with fewer multiply-adds than this run on one thread: waking the other threads
#: costs microseconds on an idle machine and far more on a busy one, so only kernels of
#: about 50 us of serial work or more go parallel. With the register-tiled kernels 8M
#: multiply-adds take 50-70 us on one core (at 1M, the old threshold, a conv of 10 us paid
#: 50-250 us to wake the team on a shared machine: the small CNN ran 8x slower on 2 threads)
PARALLEL_MIN_WORK = 1 << 23

ANCHOR_TAGS = ("dense", "dense_pack", "conv2d")


def block_names(tensors: Sequence[te.Tensor]) -> dict[int, str]:
    """The block name ``te.create_prim_func(tensors)`` gives each computed tensor (by id of
    its op): its op name, made unique in producer-first order as create_prim_func does."""
    from mlc.te.prim_func import _topo_order, _UniqueNames

    names = _UniqueNames()
    out: dict[int, str] = {}
    for t in _topo_order(list(tensors)):
        if isinstance(t.op, te.PlaceholderOp):
            continue
        out[id(t.op)] = names(t.op.name)
    return out


def _extent(sch: tir.Schedule, loop: Any) -> int:
    v = as_int(cast(tir.For, sch.get(loop)).extent)
    return v if v is not None else 0


def _vec_width(n: int) -> int:
    for v in (16, 8):
        if n % v == 0:
            return v
    return n if n <= 16 else 16


def _work(t: te.Tensor) -> int:
    size = 1
    for s in t.shape:
        size *= as_int(s) or 1
    for iv in getattr(t.op, "reduce_axis", ()):
        size *= as_int(iv.dom.extent) or 1
    return size


def register_tile(tag: str, nrows: int, ncols: int, vec: int, reduce: int = 0
                  ) -> tuple[int, int]:
    """The accumulator tile of a dense kernel: ``rows`` output rows times ``nv`` vectors of
    ``vec`` columns, kept in registers across the whole reduction. One vector per row (the
    old tile: 4 rows x 1 vector) gives 4 chains of dependent FMAs, each waiting the FMA's
    latency (4 cycles) for the one before, while the core could issue two FMAs per cycle: the
    kernel ran at a quarter of its peak. With rows x nv = 16 independent accumulators (8 x 2
    or 4 x 4 at batch 64; 1 x 8 at batch 1, where only one row exists) the FMA units stay
    busy, and
    each weight vector loaded is used ``rows`` times, each broadcast of x ``nv`` times.
    A convolution's tile is rows x vectors of output pixels (one image row each), all
    multiplied by the same broadcast weight."""
    nvec = ncols // vec if ncols % vec == 0 else 1
    if tag != "conv2d" and nrows % 8 == 0 and nvec % 2 == 0 \
            and reduce * 4 * vec * 4 > _l1_bytes():  # bytes of K x 4 vectors
        # 8 rows x 2 vectors: each weight vector loaded serves 8 FMAs. When the weight
        # block of a 4 x 4 tile (reduce x 64 floats) does not fit in L1 it streams from L2
        # (784 x 64 floats is 200 KB): 4 x 4 loaded 256 bytes of it per 16 FMAs and ran
        # 113-121 GFLOPS on 64x784x256, 8 x 2 loads 128 bytes: 136-139 (one thread,
        # interleaved runs). A block that fits in L1 keeps 4 x 4
        return 8, 2
    rows = 4 if nrows >= 4 else 1
    if tag == "conv2d" and nvec == 1 and nrows % 8 == 0:
        rows = 8  # a conv's rows are output rows: 8 of one vector each
    want = 4 if rows > 1 else 8
    nv = max((d for d in range(1, want + 1) if nvec % d == 0), default=1)
    return rows, nv


def _l1_bytes() -> int:
    from mlc.target.llvm.cpu import cache_bytes

    return cache_bytes(1)


class _Recipe:
    """Applies the steps; ``limit`` caps how many steps run (for the fallback)."""

    def __init__(self, func: Any, tensors: Sequence[te.Tensor], anchor: te.Tensor | None,
                 limit: int | None) -> None:
        self.sch = tir.Schedule(func)
        self.names = block_names(tensors)
        self.tensors = list(tensors)
        self.output = tensors[-1]
        self.anchor = anchor
        self.limit = limit
        self.done = 0

    def step(self) -> bool:
        """True when one more step may run."""
        if self.limit is not None and self.done >= self.limit:
            return False
        self.done += 1
        return True

    def block(self, t: te.Tensor) -> Any:
        return self.sch.get_block(self.names[id(t.op)])

    def run(self) -> None:
        from mlc.te.prim_func import _topo_order

        order = [t for t in _topo_order(self.tensors) if not isinstance(t.op, te.PlaceholderOp)]
        # 1. inline elementwise / injective stages (not reductions, not the output)
        for t in order:
            if t is self.output or getattr(t.op, "reduce_axis", None):
                continue
            if t.op.tag == "softmax_exp":  # computed once, vectorized in simple()
                continue
            if t.op.name == "pad_data" and self.anchor is not None \
                    and self.anchor.op.tag == "conv2d":
                # a conv's padded input stays one small copy: inlined, every multiply-add
                # of the conv tests whether it reads the border, and nothing vectorizes
                continue
            if not self.step():
                return
            self.sch.compute_inline(self.block(t))
        anchor = self.anchor
        if anchor is not None and anchor.op.tag in ANCHOR_TAGS:
            self.tile_anchor(anchor)
        else:
            self.simple(order)

    def tile_anchor(self, anchor: te.Tensor) -> None:
        sch = self.sch
        out_blk = self.block(self.output)
        # the output's spatial loops (a reduction output also has its reduce loops inside)
        loops = sch.get_loops(out_blk)[: len(cast(te.ComputeOp, self.output.op).axis)]
        ncols = _extent(sch, loops[-1])
        vec = _vec_width(ncols)
        nrows = _extent(sch, loops[-2]) if len(loops) >= 2 else 1
        red = cast(te.ComputeOp, anchor.op).reduce_axis
        rows, nv = register_tile(anchor.op.tag, nrows, ncols, vec,
                                 as_int(red[0].dom.extent) or 0 if red else 0)
        if not self.step():
            return
        jo, ji = sch.split(loops[-1], factors=[None, vec * nv])
        outer = list(loops[:-1])
        if rows > 1:
            if not self.step():
                return
            io, ii = sch.split(loops[-2], factors=[None, rows])
            sch.reorder(io, jo, ii, ji)
            outer = list(loops[:-2]) + [io]
            inner = [ii, ji]
        else:
            inner = [ji]
        at = jo
        if anchor is not self.output:
            if not self.step():
                return
            sch.compute_at(self.block(anchor), at)
        a_blk = self.block(anchor)
        a_loops = sch.get_loops(a_blk)
        # te nests the spatial loops, then the reduce loops; compute_at keeps that order
        below = a_loops[len(outer) + 1:]
        nred = len(cast(te.ComputeOp, anchor.op).reduce_axis)
        reduce_loops, spatial = below[len(below) - nred:], below[:len(below) - nred]
        if reduce_loops and spatial:
            if not self.step():
                return
            sch.reorder(*reduce_loops, *spatial)
            if not self.step():
                return
            sch.decompose_reduction(a_blk, reduce_loops[0])
        row_loops, jv = spatial[:-1], None
        if spatial and nv > 1 and _extent(sch, spatial[-1]) == vec * nv and self.step():
            # nv vectors side by side: nv independent accumulator chains per row
            jv, jl = sch.split(spatial[-1], factors=[nv, vec])
            spatial = [*row_loops, jv, jl]
        if spatial and self.step():
            if _extent(sch, spatial[-1]) > 1:
                sch.vectorize(spatial[-1])
        if row_loops and _extent(sch, row_loops[-1]) <= 8 and self.step():
            sch.unroll(row_loops[-1])
        if jv is not None and self.step():
            sch.unroll(jv)
        if anchor is not self.output:
            if nv > 1 and self.step():
                ov, ol = sch.split(inner[-1], factors=[nv, vec])
                inner = [*inner[:-1], ov, ol]
            if self.step():
                sch.vectorize(inner[-1])
            if len(inner) >= 2 and self.step():
                sch.unroll(inner[0])
        if _work(anchor) >= PARALLEL_MIN_WORK and self.step():
            par = [lp for lp in sch.get_loops(out_blk)[: len(outer)] if _extent(sch, lp) > 1]
            if par:
                sch.parallel(par[0])

    def simple(self, order: Sequence[te.Tensor]) -> None:
        """Reductions, pools, softmax: parallel outer loop when big, vectorize the output's
        innermost loop when it is spatial."""
        sch = self.sch
        for t in order:  # reductions kept in vector lanes (topi.nn.norm: softmax's stats)
            if t.op.tag == "lanes_reduce" and self.step():
                self.vector_lanes(t)
            if t.op.tag == "softmax_exp" and self.step():
                inner = sch.get_loops(self.block(t))[-1]
                vec = _vec_width(_extent(sch, inner))
                sch.vectorize(sch.split(inner, factors=[None, vec])[1])
        out_blk = self.block(self.output)
        loops = sch.get_loops(out_blk)
        if not loops:
            return
        if not getattr(self.output.op, "reduce_axis", ()) and _extent(sch, loops[-1]) >= 4:
            if self.step():
                n = _extent(sch, loops[-1])
                vec = _vec_width(n)
                if vec < n:
                    _, ji = sch.split(loops[-1], factors=[None, vec])
                    sch.vectorize(ji)
                else:
                    sch.vectorize(loops[-1])
        if sum(_work(t) for t in order) >= PARALLEL_MIN_WORK and self.step():
            outer = sch.get_loops(out_blk)[0]
            if _extent(sch, outer) > 1 and len(order) == 1:
                sch.parallel(outer)


    def vector_lanes(self, t: te.Tensor) -> None:
        """``part[r, l] = max/sum over ko of ...``: the reduction loop goes outside the lane
        loop, which is vectorized (16 running results in one register)::

            for r, l, ko: part[r, l] += f(r, ko * 16 + l)
            ->  for r: part[r, 0:16] = 0; for ko: part[r, 0:16] += f(r, ko * 16 + 0:16)
        """
        sch = self.sch
        blk = self.block(t)
        loops = sch.get_loops(blk)
        lane, ko = loops[-2], loops[-1]
        sch.reorder(ko, lane)
        sch.decompose_reduction(blk, ko)
        sch.vectorize(lane)
        init = sch.get_loops(sch.get_block(self.names[id(t.op)] + "_init"))
        sch.vectorize(init[-1])


def _apply(func: Any, tensors: Sequence[te.Tensor], anchor: te.Tensor | None) -> tir.Schedule:
    recipe = _Recipe(func, tensors, anchor, None)
    try:
        recipe.run()
        return recipe.sch
    except MLCError:
        failed_at = recipe.done
    # replay only the steps before the one that was refused
    recipe = _Recipe(func, tensors, anchor, failed_at - 1)
    recipe.run()
    return recipe.sch


def default_schedule(tensors: Sequence[te.Tensor], anchor: te.Tensor | None = None
                     ) -> tir.Schedule:
    """A scheduled ``tir.Schedule`` for ``te.create_prim_func(tensors)`` (the last tensor is
    the output). ``anchor`` is the main reduction (found by its tag when not given)."""
    tensors = list(tensors)
    from mlc.te.prim_func import _topo_order

    if any(t.op.tag == "dense_int8" for t in _topo_order(tensors)):  # int8: tensorized
        from mlc.topi.x86.dense_int8 import schedule_dense_int8

        return schedule_dense_int8(tensors)
    if anchor is None:

        anchors = [t for t in _topo_order(tensors) if t.op.tag in ANCHOR_TAGS]
        anchor = anchors[-1] if anchors else None
    func = te.create_prim_func(tensors)
    return _apply(func, tensors, anchor)


def schedule_group(lowered: Any) -> tir.Schedule:
    """The default schedule of a lowered fused graph group
    (:class:`mlc.graph.to_te.LoweredGroup`)."""
    tensors = list(lowered.params) + [lowered.output]
    return default_schedule(tensors, lowered.anchor)
