"""``tir.Schedule``: TensorIR-style scheduling of a PrimFunc.

Every primitive is a PrimFunc -> PrimFunc transformation with a validity check; a
transformation that would change what the program computes raises ``ScheduleError``.

    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    blk = sch.get_block("C")
    i, j, k = sch.get_loops(blk)
    i0, i1 = sch.split(i, factors=[None, 32])
    sch.reorder(i0, j, k, i1)
    print(sch.mod)        # the program now
    print(sch.trace)      # what was done, replayable
"""

from __future__ import annotations

from mlc.tir.schedule.blockize import BlockizePrimitives
from mlc.tir.schedule.cache import CachePrimitives
from mlc.tir.schedule.compute_location import ComputeLocationPrimitives
from mlc.tir.schedule.layout import LayoutPrimitives
from mlc.tir.schedule.loops import LoopPrimitives
from mlc.tir.schedule.reduction import ReductionPrimitives
from mlc.tir.schedule.sampling import SamplingPrimitives


class Schedule(
    LoopPrimitives,
    SamplingPrimitives,
    ComputeLocationPrimitives,
    CachePrimitives,
    LayoutPrimitives,
    ReductionPrimitives,
    BlockizePrimitives,
):
    """A schedule of one PrimFunc: ``Schedule(func, seed=None)``. ``sch.mod`` is the current
    program, ``sch.trace`` the primitives applied so far."""
