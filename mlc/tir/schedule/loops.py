"""Schedule primitives: loops (filled in by its owner)."""

from __future__ import annotations

from mlc.tir.schedule.base import ScheduleBase


class LoopPrimitives(ScheduleBase):
    pass
