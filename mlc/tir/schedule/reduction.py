"""Schedule primitives: reduction (filled in by its owner)."""

from __future__ import annotations

from mlc.tir.schedule.base import ScheduleBase


class ReductionPrimitives(ScheduleBase):
    pass
