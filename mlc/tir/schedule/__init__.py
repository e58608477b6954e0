"""TensorIR-style schedules: handles, primitives, traces."""

from mlc.tir.schedule.schedule import Schedule
from mlc.tir.schedule.trace import BlockRV, Instruction, LoopRV, SampledInt, Trace

__all__ = ["Schedule", "Trace", "Instruction", "BlockRV", "LoopRV", "SampledInt"]
