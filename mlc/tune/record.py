"""Tuning records: one JSON object per line, and ``apply_history_best``.

A record is ``{"task": <workload key>, "config": {"index": ..., "entities": ...} | null,
"trace": <schedule trace JSON> | null, "costs": [seconds, ...], "error": null | "...",
"time": <unix time>}``. Logs are append-only; a tuner that finds its log already holds
records of its task measures none of them again.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlc.tune.space import ConfigEntity, ConfigSpace
from mlc.tune.task import DispatchContext, dispatch


@dataclass
class MeasureResult:
    """What one measurement gave: run times in seconds, or the error that stopped it."""

    costs: list[float]
    error: str | None = None
    build_seconds: float = 0.0
    timestamp: float = field(default_factory=time.time)

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.costs)

    @property
    def mean(self) -> float:
        return sum(self.costs) / len(self.costs) if self.ok else math.inf


def encode(task_key: str, config: dict[str, Any] | None, trace: Any, result: MeasureResult) -> str:
    return json.dumps(
        {
            "task": task_key,
            "config": config,
            "trace": trace,
            "costs": result.costs,
            "error": result.error,
            "time": result.timestamp,
        }
    )


def load(path: str | Path) -> Iterator[dict[str, Any]]:
    """The records of a log file (lines that do not parse are skipped)."""
    p = Path(path)
    if not p.exists():
        return
    with p.open() as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def record_mean(rec: dict[str, Any]) -> float:
    costs = rec.get("costs") or []
    if rec.get("error") or not costs:
        return math.inf
    return sum(costs) / len(costs)


def best_records(path: str | Path) -> dict[str, dict[str, Any]]:
    """The fastest successful record of each task in the log."""
    best: dict[str, dict[str, Any]] = {}
    for rec in load(path):
        key = rec.get("task")
        if key is None or record_mean(rec) == math.inf:
            continue
        if key not in best or record_mean(rec) < record_mean(best[key]):
            best[key] = rec
    return best


class ApplyHistoryBest(DispatchContext):
    """Dispatch context that gives each template the best config in a log."""

    def __init__(self, path: str | Path) -> None:
        self.best = best_records(path)

    def query(self, key: str, space: Callable[[], ConfigSpace]) -> ConfigSpace | ConfigEntity:
        rec = self.best.get(key)
        if rec is None or rec.get("config") is None:
            return space().get(0)
        return space().get(int(rec["config"]["index"]))


@contextmanager
def apply_history_best(path: str | Path) -> Iterator[ApplyHistoryBest]:
    """Inside this ``with``, calling a template uses the best config measured in ``path``."""
    context = ApplyHistoryBest(path)
    with dispatch(context):
        yield context
