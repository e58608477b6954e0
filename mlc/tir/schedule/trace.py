"""The trace: every primitive a Schedule applied, as replayable JSON data.

Each instruction is ``[kind, inputs, outputs]``: ``kind`` is the primitive's method name,
``inputs`` its keyword arguments with handles written as ``"$b0"`` (a block), ``"$l3"`` (a
loop) or ``"$v5"`` (a sampled value), and ``outputs`` the ids of the handles it returned.
Sampling instructions keep their decision in ``inputs["decision"]``, so replaying a trace
makes the same choices. The same JSON rebuilds the schedule on a fresh PrimFunc::

    data = sch.trace.as_json()
    sch2 = tir.Schedule(func)
    tir.Trace.apply_json_to_schedule(data, sch2)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mlc.errors import ScheduleError

if TYPE_CHECKING:
    from mlc.tir.schedule.schedule import Schedule


class BlockRV:
    """A handle to a block. It keeps naming the same block through transformations."""

    def __init__(self, rv_id: str) -> None:
        self.rv_id = rv_id

    def __repr__(self) -> str:
        return f"BlockRV({self.rv_id})"


class LoopRV:
    """A handle to a loop. It keeps naming the same loop while the loop exists."""

    def __init__(self, rv_id: str) -> None:
        self.rv_id = rv_id

    def __repr__(self) -> str:
        return f"LoopRV({self.rv_id})"


class SampledInt(int):
    """An int chosen by ``sample_*``; it remembers where it came from so the trace links a
    split's factors to the sampling decision that produced them."""

    rv_id: str

    def __new__(cls, value: int, rv_id: str) -> SampledInt:
        obj = super().__new__(cls, value)
        obj.rv_id = rv_id
        return obj


Handle = BlockRV | LoopRV | SampledInt


@dataclass
class Instruction:
    kind: str
    inputs: dict[str, Any]
    outputs: list[str]

    def as_python(self) -> str:
        args = ", ".join(f"{k}={_py(v)}" for k, v in self.inputs.items())
        lhs = ", ".join(self.outputs)
        call = f"sch.{self.kind}({args})"
        return f"{lhs} = {call}" if lhs else call


def _py(value: Any) -> str:
    if isinstance(value, str) and value.startswith("$"):
        return value[1:]
    if isinstance(value, list):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    return repr(value)


@dataclass
class Trace:
    """The list of primitives applied so far. ``print(sch.trace)`` shows them as code."""

    insts: list[Instruction] = field(default_factory=list)

    def as_json(self) -> list[list[Any]]:
        return [[i.kind, i.inputs, i.outputs] for i in self.insts]

    def as_python(self) -> str:
        return "\n".join(i.as_python() for i in self.insts)

    def __repr__(self) -> str:
        return self.as_python() or "# (empty trace)"

    def __len__(self) -> int:
        return len(self.insts)

    @property
    def decisions(self) -> dict[int, Any]:
        """Index of each sampling instruction -> its decision (the tuner's search point)."""
        return {
            k: inst.inputs["decision"]
            for k, inst in enumerate(self.insts)
            if "decision" in inst.inputs
        }

    def apply_to_schedule(
        self, sch: Schedule, decisions: dict[int, Any] | None = None
    ) -> None:
        """Replay on ``sch`` (a fresh Schedule of the same PrimFunc). ``decisions`` overrides
        the recorded choice of sampling instructions by index."""
        Trace.apply_json_to_schedule(self.as_json(), sch, decisions)

    @staticmethod
    def apply_json_to_schedule(
        json_obj: Any, sch: Schedule, decisions: dict[int, Any] | None = None
    ) -> None:
        """Replay JSON made by :meth:`as_json` (or its ``json.dumps`` text) on ``sch``."""
        if isinstance(json_obj, str):
            json_obj = json.loads(json_obj)
        handles: dict[str, Any] = {}

        def decode(value: Any) -> Any:
            if isinstance(value, str) and value.startswith("$"):
                if value[1:] not in handles:
                    raise ScheduleError(f"trace refers to {value[1:]} before it is defined")
                return handles[value[1:]]
            if isinstance(value, list):
                return [decode(v) for v in value]
            return value

        for k, entry in enumerate(json_obj):
            kind, inputs, outputs = entry
            method = getattr(sch, kind, None)
            if method is None or kind.startswith("_"):
                raise ScheduleError(f"trace instruction {k} uses unknown primitive {kind!r}")
            args = {name: decode(v) for name, v in inputs.items()}
            if decisions and k in decisions:
                args["decision"] = decisions[k]
            result = method(**args)
            returned = _flatten(result)
            if len(returned) != len(outputs):
                raise ScheduleError(
                    f"trace instruction {k} ({kind}) returned {len(returned)} handles, "
                    f"the trace expects {len(outputs)}"
                )
            for rv_id, handle in zip(outputs, returned):
                handles[rv_id] = handle


def _flatten(result: Any) -> list[Any]:
    if result is None:
        return []
    if isinstance(result, (list, tuple)):
        out: list[Any] = []
        for r in result:
            out.extend(_flatten(r))
        return out
    return [result]
