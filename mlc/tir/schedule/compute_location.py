"""Schedule primitives: compute_location (filled in by its owner)."""

from __future__ import annotations

from mlc.tir.schedule.base import ScheduleBase


class ComputeLocationPrimitives(ScheduleBase):
    pass
