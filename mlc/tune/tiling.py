"""The default search space for any loop program: BLAS-style tiling for CPUs.

A block that accumulates a product of two operands, ``out[..., i, j] += lhs * rhs`` (matmul,
dense, conv2d), gets what BLAS libraries do (:func:`tile_gemm`): both operands packed into
panels, a register-tile micro-kernel sized from the vector registers, cache blocking of the
reduction and of both output dimensions. Each of those decisions is sampled, so the space is
every such program; the tuner picks the one this machine runs fastest.

Any other reduction gets the classic "SSRSRS" tiling (:func:`tile_reduction`): each spatial
loop is split into four tiles and each reduce loop into two, ordered

    s0 (fused, parallel) | s1 | r0 | s2 | r1 (unrolled) | s3 (unrolled; the last one vectorized)

with the result accumulated in a ``local`` write cache copied back under ``s1``, and the
reduction's init moved out of the reduce loops. The tile sizes are sampled
(``sample_perfect_tile``), so the space is every way to tile the loops. Blocks without a
reduction are fused, split for the vector width, parallelized and vectorized.
"""

from __future__ import annotations

import math
from typing import cast

from mlc.errors import ScheduleError
from mlc.tir.expr import IntImm, IterKind, Var
from mlc.tir.functor import post_order_visit
from mlc.tir.schedule import Schedule, state
from mlc.tir.schedule.trace import BlockRV, LoopRV
from mlc.tir.stmt import Block, BlockRealize, BufferStore, For

VECTOR_LANES = 64  # up to four 16-lane AVX-512 vectors per row of the register tile


def _vars_in(expr: object) -> set[Var]:
    found: set[Var] = set()

    def visit(n: object) -> None:
        if isinstance(n, Var):
            found.add(n)

    post_order_visit(expr, visit)
    return found


def _classify(
    sch: Schedule, block: BlockRV, loops: list[LoopRV]
) -> tuple[list[LoopRV], list[LoopRV]]:
    """Split the loops around a block into spatial and reduce ones (by the block's bindings)."""
    loc = state.find_block(sch.mod, cast(Block, sch.get(block)).name)
    assert loc is not None
    realize = loc.stmt
    assert isinstance(realize, BlockRealize)
    spatial_vars: set[Var] = set()
    reduce_vars: set[Var] = set()
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):
        (reduce_vars if iv.kind == IterKind.REDUCE else spatial_vars).update(_vars_in(value))
    spatial, reduce = [], []
    for rv in loops:
        node = sch.get(rv)
        assert isinstance(node, For)
        if node.loop_var in reduce_vars:
            reduce.append(rv)
        elif node.loop_var in spatial_vars:
            spatial.append(rv)
    return spatial, reduce


def _const_extents(sch: Schedule, loops: list[LoopRV]) -> bool:
    return all(isinstance(sch.get(rv).extent, IntImm) for rv in loops)  # type: ignore[union-attr]


def tile_reduction(sch: Schedule, block: BlockRV) -> bool:
    """SSRSRS multi-level tiling with a local write cache. False when it does not apply."""
    loops = sch.get_loops(block)
    spatial, reduce = _classify(sch, block, loops)
    if len(spatial) < 2 or not reduce or len(spatial) + len(reduce) != len(loops):
        return False
    if not _const_extents(sch, loops):
        return False
    s_tiles = []
    for k, rv in enumerate(spatial):
        inner = VECTOR_LANES if k == len(spatial) - 1 else 8
        s_tiles.append(sch.split(rv, sch.sample_perfect_tile(rv, n=4, max_innermost_factor=inner)))
    r_tiles = []
    for rv in reduce:
        r_tiles.append(sch.split(rv, sch.sample_perfect_tile(rv, n=2, max_innermost_factor=16)))
    order = (
        [t[0] for t in s_tiles] + [t[1] for t in s_tiles] + [t[0] for t in r_tiles]
        + [t[2] for t in s_tiles] + [t[1] for t in r_tiles] + [t[3] for t in s_tiles]
    )
    sch.reorder(*order)
    write_back = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(write_back, s_tiles[-1][1], preserve_unit_loops=True)
    sch.decompose_reduction(block, r_tiles[0][0])
    outer = sch.fuse(*[t[0] for t in s_tiles])
    sch.parallel(outer)
    # the register tile: s3 of the other spatial loops and r1 unrolled, s3 of the last vectorized
    for t in s_tiles[:-1]:
        sch.unroll(t[3])
    sch.unroll(r_tiles[-1][1])
    sch.vectorize(s_tiles[-1][3])
    _vectorize_copy_back(sch, write_back)
    return True


def _vectorize_copy_back(sch: Schedule, block: BlockRV) -> None:
    loops = sch.get_loops(block)
    if loops:
        try:
            sch.vectorize(loops[-1])
        except ScheduleError:
            pass


def tile_elementwise(sch: Schedule, block: BlockRV) -> bool:
    """Fuse a block's loops, split off the vector width, parallel outside, vectorize inside.
    When the innermost loop is long and not a multiple of the vector width (the rows of a
    padded image), the outer loops are fused and run in parallel and the rows stay whole,
    so indices need no division by the row length."""
    from mlc.target.llvm.cpu import host_simd

    loops = sch.get_loops(block)
    spatial, reduce = _classify(sch, block, loops)
    if reduce or not loops or len(spatial) != len(loops):
        return False
    last = sch.get(loops[-1])
    lanes = host_simd().lanes
    if (len(loops) > 1 and isinstance(last, For) and isinstance(last.extent, IntImm)
            and last.extent.value >= 2 * lanes and last.extent.value % lanes):
        sch.parallel(sch.fuse(*loops[:-1]) if len(loops) > 2 else loops[0])
        return True
    fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    outer, inner = sch.split(fused, factors=[None, VECTOR_LANES])
    sch.parallel(outer)
    sch.vectorize(inner)
    return True


def default_space(sch: Schedule) -> None:
    """Schedule every block of ``sch`` with sampled decisions (the default search space):
    BLAS-style when the block is a product accumulated over a reduction, else SSRSRS tiling,
    else (no reduction) fused, parallel and vectorized."""
    names = [loc.stmt.block.name for loc in state.all_blocks(sch.mod)]  # type: ignore[attr-defined]
    for name in names:
        if state.find_block(sch.mod, name) is None:
            continue
        block = sch.get_block(name)
        if not (tile_gemm(sch, block) or tile_reduction(sch, block)):
            tile_elementwise(sch, block)


# ---------------------------------------------------------------------------------------------
# BLAS-style tiling (GotoBLAS / BLIS, written as schedule primitives)

MC_ROWS = [32, 64, 128, 256]  # rows of the packed block of lhs (L2)
KC_DEPTH = [64, 128, 256, 512, 1024]  # depth of a reduction slice (both panels)
NC_PANELS = [1, 2, 4, 8, 16, 32]  # register-tile widths in the packed panel of rhs


def register_tiles(rows: int, cols: int, lanes: int, registers: int,
                   stack: int = 1) -> list[tuple[int, int]]:
    """The ``(mr, nr)`` register tiles of the micro-kernel: ``mr x nr`` accumulators in
    ``mr * nr / lanes`` vector registers, plus ``nr / lanes`` for a row of rhs and one for the
    broadcast of lhs, all within ``registers``. For each width ``nr`` (whole vectors that
    divide ``cols``, or, when they do not, vectors stacked over ``stack``, another loop rhs
    moves with: the output rows of a convolution): the tallest tile that fits (most
    independent FMAs in flight; when ``mr`` does not divide ``rows`` the last tile is
    guarded, and ``unswitch_loops`` keeps the guard out of the micro-kernel) and the
    tallest that divides ``rows``, if at least half the registers accumulate. AVX2 (8
    lanes, 16 registers) on 1024 x 1024: ``[(14, 8), (8, 8), (6, 16), (4, 16), (2, 32)]``;
    a 56 x 56 convolution with 64 filters adds 16-wide tiles of two rows of 8."""
    tiles: list[tuple[int, int]] = []
    for vecs in range(1, 5):
        nr = vecs * lanes
        if cols % nr and (cols % lanes or stack % vecs):
            continue
        tallest = (registers - vecs - 1) // vecs
        dividing = next((m for m in range(tallest, 0, -1) if rows % m == 0), 1)
        for mr in (min(tallest, rows), dividing):
            if mr >= 1 and 2 * mr * vecs >= registers and (mr, nr) not in tiles:
                tiles.append((mr, nr))
    return tiles or [(1, lanes if cols % lanes == 0 else 1)]


def _largest_divisor(n: int, at_most: int, multiple_of: int = 1) -> int:
    """The largest multiple of ``multiple_of`` that divides ``n`` and is at most ``at_most``
    (``multiple_of`` if none is)."""
    for d in range(max(at_most, multiple_of), 0, -1):
        if d % multiple_of == 0 and n % d == 0 and d <= max(at_most, multiple_of):
            return d
    return multiple_of


def _operands(sch: Schedule, block: BlockRV) -> tuple[int, int] | None:
    """For ``out = out + lhs[...] * rhs[...]``: the read indices (into ``block.reads``) of
    the broadcast operand (lhs, which does not use the last spatial loop) and of the vector
    operand (rhs, whose last index moves with it). None for any other block."""
    from mlc.tir.expr import Add, BufferLoad, Mul

    blk = cast(Block, sch.get(block))
    body = blk.body
    if not isinstance(body, BufferStore) or len(blk.writes) != 1 or len(blk.reads) != 2:
        return None
    value = body.value
    if not (isinstance(value, Add) and isinstance(value.b, Mul)):
        return None
    loads = [value.b.a, value.b.b]
    if not all(isinstance(x, BufferLoad) for x in loads):
        return None
    spatial = [iv.var for iv in blk.iter_vars if iv.kind != IterKind.REDUCE]
    col = spatial[-1]
    if not (isinstance(body.indices[-1], Var) and body.indices[-1] is col):
        return None  # the output's innermost dimension must be the vectorized loop
    uses_col = [col in _vars_in(ld) for ld in loads]
    if uses_col.count(True) != 1:
        return None
    rhs = cast(BufferLoad, loads[uses_col.index(True)])
    lhs = cast(BufferLoad, loads[uses_col.index(False)])
    if col not in _vars_in(rhs.indices[-1]) or any(col in _vars_in(i) for i in rhs.indices[:-1]):
        return None
    names = [r.buffer.name for r in blk.reads]
    if lhs.buffer.name == rhs.buffer.name:
        return None
    return names.index(lhs.buffer.name), names.index(rhs.buffer.name)


def tile_gemm(sch: Schedule, block: BlockRV) -> bool:
    """BLAS-style tiling of ``out[..., i, j] += lhs[i, k] * rhs[k, j]``. False when the block
    is not such a product (see :func:`_operands`) or its loops are not constant.

    The loop nest it makes, with the sampled sizes ``mr x nr`` (register tile), ``kc``
    (reduction slice), ``mc`` (rows of a packed lhs block), ``nc`` (columns of a packed rhs
    panel)::

        for jc in parallel(N / nc):                # (fused with any batch loops;
                                                   #  ic is parallel when N / nc is 1)
            init out[:, jc-panel] = 0
            for pc in range(K / kc):
                rhs_p = rhs[pc-slice, jc-panel]    # pack_b: [nc/nr][kc][nr], read by every ic
                for ic in range(M / mc):
                    lhs_p = lhs[ic-block, pc-slice]    # pack_a: mc x kc, short rows
                    for jr in range(nc / nr):
                        for ir in range(mc / mr):
                            for k in range(kc):    # the micro-kernel (k unrolled unroll_k)
                                for i in unroll(mr):           # mr x nr accumulators
                                    for j in vectorized(nr):   # stay in registers
                                        out[i, j] += lhs_p[i, k] * rhs_p[jr, k, j]

    When ``kc`` covers the whole reduction there is no ``pc`` loop: ``init`` moves into
    the register tile (the accumulators start at zero just before the ``k`` loop, no pass
    over ``out``) and rhs is packed once per ``jc`` panel.

    Each decision is one ``sample_categorical``: ``tile`` indexes the register tiles that
    fit this CPU's vector registers (:func:`register_tiles`, from LLVM's host features);
    ``mc``, ``kc`` and ``nc`` are target sizes, rounded down to sizes that divide the loops.
    """
    from mlc.target.llvm.cpu import host_simd

    loops = sch.get_loops(block)
    spatial, reduce = _classify(sch, block, loops)
    if len(spatial) < 2 or not reduce or len(spatial) + len(reduce) != len(loops):
        return False
    if not _const_extents(sch, loops):
        return False
    ops = _operands(sch, block)
    if ops is None:
        return False
    lhs_index, rhs_index = ops
    blk = cast(Block, sch.get(block))
    lhs_name, rhs_name = blk.reads[lhs_index].buffer.name, blk.reads[rhs_index].buffer.name
    row_rv = _row_loop(sch, block, spatial, lhs_name)
    col_rv = spatial[-1]
    outer = [rv for rv in spatial if rv is not row_rv and rv is not col_rv]
    rows, cols = _extent(sch, row_rv), _extent(sch, col_rv)
    depth = _extent(sch, reduce[0])
    simd = host_simd()
    stack_rv = _stack_loop(sch, block, outer, lhs_name, rhs_name)
    stack = _extent(sch, stack_rv) if stack_rv is not None else 1
    tiles = register_tiles(rows, cols, simd.lanes, simd.registers, stack)

    # --- the decisions (sampled first: every point of the space makes the same calls)
    tile = sch.sample_categorical(list(range(len(tiles))), [1.0] * len(tiles))
    mc_rows = sch.sample_categorical(MC_ROWS, [1.0] * len(MC_ROWS))
    kc_depth = sch.sample_categorical(KC_DEPTH, [1.0] * len(KC_DEPTH))
    nc_panels = sch.sample_categorical(NC_PANELS, [1.0] * len(NC_PANELS))
    pack_a = sch.sample_categorical([0, 1], [0.5, 0.5])
    pack_b = sch.sample_categorical([0, 1], [0.5, 0.5])
    unroll_k = sch.sample_categorical([1, 4], [0.5, 0.5])

    # --- the sizes they give, each dividing its loop
    mr, nr = tiles[tile]
    if rows % mr:  # a guarded last tile: blocks of whole tiles, no block past the end
        mc = mr * _largest_divisor(-(-rows // mr), max(1, int(mc_rows) // mr))
    else:
        mc = _largest_divisor(rows, int(mc_rows), multiple_of=mr)
    kc = _largest_divisor(depth, int(kc_depth))
    stacked = []  # the tile's vectors over rows of stack_rv, when they do not fit side by side
    if cols % nr:
        assert stack_rv is not None
        s_outer, s_inner = sch.split(stack_rv, factors=[None, nr // simd.lanes])
        outer = [s_outer if rv is stack_rv else rv for rv in outer]
        stacked, nr = [s_inner], simd.lanes
    nc = nr * _largest_divisor(cols // nr, int(nc_panels))

    # --- the loop nest
    ic, ir, i = sch.split(row_rv, factors=[None, mc // mr, mr])
    jc, jr, j = sch.split(col_rv, factors=[None, nc // nr, nr])
    pc: LoopRV | None = None
    k = reduce[0]
    if kc < depth:
        pc, k = sch.split(reduce[0], factors=[None, kc])
    inner_reduce = [k, *reduce[1:]]
    ku = _largest_divisor(_extent(sch, inner_reduce[-1]), int(unroll_k))
    k_unrolled = None
    if ku > 1:
        inner_reduce[-1], k_unrolled = sch.split(inner_reduce[-1], factors=[None, ku])
    order = [*outer, jc, *([pc] if pc is not None else []), ic, jr, ir, *inner_reduce]
    order += [k_unrolled] if k_unrolled is not None else []
    sch.reorder(*order, i, *stacked, j)
    task = sch.fuse(*outer, jc) if outer else jc
    # one reduction slice: the register tile starts from zero (no pass over out, no load)
    init = sch.decompose_reduction(block, pc if pc is not None else inner_reduce[0])
    if pack_b:
        _pack(sch, block, rhs_name, pc if pc is not None else task, simd.lanes, panel=nr)
    if pack_a:
        _pack(sch, block, lhs_name, ic, simd.lanes)
    sch.unroll(i)
    for rv in stacked:
        sch.unroll(rv)
    if k_unrolled is not None:
        sch.unroll(k_unrolled)
    _vectorize_native(sch, j, simd.lanes)
    _vectorize_native(sch, sch.get_loops(init)[-1], simd.lanes)
    # one column panel (nc = N, as when a 64-wide AVX-512 tile covers N = 64) leaves the
    # panel loop one iteration long: the outermost loop of independent output tiles that has
    # more than one iteration runs in parallel instead (row blocks, then panels, then tiles)
    sch.parallel(next((rv for rv in (task, ic, jr, ir) if _extent(sch, rv) > 1), task))
    return True


def _vectorize_native(sch: Schedule, loop: LoopRV, lanes: int) -> None:
    """Vectorize ``loop`` at the machine's width: a loop of ``v x lanes`` iterations becomes
    ``v`` unrolled vectors of ``lanes`` (wider vector types cost LLVM seconds to compile)."""
    n = _extent(sch, loop)
    if n > lanes and n % lanes == 0:
        outer, loop = sch.split(loop, factors=[None, lanes])
        sch.unroll(outer)
    sch.vectorize(loop)


def _extent(sch: Schedule, rv: LoopRV) -> int:
    return cast(IntImm, cast(For, sch.get(rv)).extent).value


def _row_loop(sch: Schedule, block: BlockRV, spatial: list[LoopRV], lhs: str) -> LoopRV:
    """The innermost spatial loop (but the last) that the broadcast operand moves with: the
    rows of the register tile (``i`` of a matmul, the output channel of a conv2d)."""
    blk = cast(Block, sch.get(block))
    realize = state.find_block(sch.mod, blk.name)
    assert realize is not None and isinstance(realize.stmt, BlockRealize)
    load = next(r for r in blk.reads if r.buffer.name == lhs)
    used: set[Var] = set()
    for rng in load.region:
        used |= _vars_in(rng.min)
    bound = dict(zip([iv.var for iv in blk.iter_vars], realize.stmt.iter_values))
    lhs_loops = set().union(*[_vars_in(bound[v]) for v in used if v in bound])
    for rv in reversed(spatial[:-1]):
        if cast(For, sch.get(rv)).loop_var in lhs_loops:
            return rv
    return spatial[-2]


def _stack_loop(sch: Schedule, block: BlockRV, outer: list[LoopRV], lhs: str,
                rhs: str) -> LoopRV | None:
    """The innermost of ``outer`` that rhs moves with and lhs does not (the output row ``y``
    of a convolution, whose input row ``y + ry`` is another vector for the same broadcast
    weight); None if there is none (a matmul)."""
    blk = cast(Block, sch.get(block))
    realize = state.find_block(sch.mod, blk.name)
    assert realize is not None and isinstance(realize.stmt, BlockRealize)
    bound = dict(zip([iv.var for iv in blk.iter_vars], realize.stmt.iter_values))

    def loops_of(name: str) -> set[Var]:
        load = next(r for r in blk.reads if r.buffer.name == name)
        used: set[Var] = set()
        for rng in load.region:
            used |= _vars_in(rng.min)
        return set().union(*[_vars_in(bound[v]) for v in used if v in bound])

    rhs_loops, lhs_loops = loops_of(rhs), loops_of(lhs)
    for rv in reversed(outer):
        var = cast(For, sch.get(rv)).loop_var
        if var in rhs_loops and var not in lhs_loops:
            return rv
    return None


def _pack(sch: Schedule, block: BlockRV, buffer: str, loop: LoopRV, lanes: int,
          panel: int = 0) -> None:
    """Copy what ``block`` reads of ``buffer`` in one iteration of ``loop`` into a compact
    buffer made there (a packed panel: contiguous, one per thread), vectorized. With
    ``panel`` (the register tile's width ``nr``) the copy is stored BLIS's way, as
    ``[cols / nr][rows][nr]``: the micro-kernel then reads its ``kc x nr`` sliver as one
    contiguous stream instead of ``nr`` of every ``nc`` floats of each row (rows ``nc``
    floats apart fall into a few L1 sets and evict one another)."""
    blk = cast(Block, sch.get(block))
    index = [r.buffer.name for r in blk.reads].index(buffer)
    copy = sch.cache_read(block, index, "global")
    sch.compute_at(copy, loop)
    cache = cast(Block, sch.get(copy)).writes[0].buffer
    dims = [d.value if isinstance(d, IntImm) else 0 for d in cache.shape]
    if (panel > 1 and len(dims) >= 2 and all(dims) and dims[-1] % panel == 0
            and dims[-1] > panel and math.prod(dims) <= 1 << 24):
        names = ", ".join(f"i{d}" for d in range(len(dims) - 1))
        sch.transform_layout(copy, cache.name, f"lambda {names}, j: "
                             f"(j // {panel}, {names}, j % {panel})")
    last = sch.get_loops(copy)[-1]
    if _extent(sch, last) % lanes == 0:
        _, inner = sch.split(last, factors=[None, lanes])
        sch.vectorize(inner)
