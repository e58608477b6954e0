"""The default search space for any loop program: multi-level tiling for CPUs.

For a block with a reduction and at least two spatial loops (matmul, dense, conv2d) the
space is the classic "SSRSRS" tiling: each spatial loop is split into four tiles and each
reduce loop into two, ordered

    s0 (fused, parallel) | s1 | r0 | s2 | r1 (unrolled) | s3 (unrolled; the last one vectorized)

with the result accumulated in a ``local`` write cache copied back under ``s1``, and the
reduction's init moved out of the reduce loops. The tile sizes are sampled
(``sample_perfect_tile``), so the space is every way to tile the loops. Blocks without a
reduction are fused, split for the vector width, parallelized and vectorized.
"""

from __future__ import annotations

from typing import cast

from mlc.errors import ScheduleError
from mlc.tir.expr import IntImm, IterKind, Var
from mlc.tir.functor import post_order_visit
from mlc.tir.schedule import Schedule, state
from mlc.tir.schedule.trace import BlockRV, LoopRV
from mlc.tir.stmt import Block, BlockRealize, For

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
    """Fuse a block's loops, split off the vector width, parallel outside, vectorize inside."""
    loops = sch.get_loops(block)
    spatial, reduce = _classify(sch, block, loops)
    if reduce or not loops or len(spatial) != len(loops):
        return False
    fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    outer, inner = sch.split(fused, factors=[None, VECTOR_LANES])
    sch.parallel(outer)
    sch.vectorize(inner)
    return True


def default_space(sch: Schedule) -> None:
    """Schedule every block of ``sch`` with sampled tile sizes (the default search space)."""
    names = [loc.stmt.block.name for loc in state.all_blocks(sch.mod)]  # type: ignore[attr-defined]
    for name in names:
        if state.find_block(sch.mod, name) is None:
            continue
        block = sch.get_block(name)
        if not tile_reduction(sch, block):
            tile_elementwise(sch, block)
