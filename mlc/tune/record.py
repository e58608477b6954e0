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

from mlc.tune.space import ConfigEntity, ConfigSpace, TuneError
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
    """The records of a log file. A line that does not parse, or parses to something that is
    not a record (see :func:`well_formed`), is skipped: a log cut short by a crash, or edited
    by hand, still gives every record it holds, and a bad one never becomes "the best"."""
    p = Path(path)
    if not p.exists():
        return
    with p.open() as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                continue
            if well_formed(rec):
                yield rec


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def well_formed(rec: Any) -> bool:
    """Is ``rec`` a record a tuner can use: a dict whose ``task`` is a string, whose
    ``error`` is a string or null, whose ``config`` is null or a dict with an ``index`` that
    is an int >= 0 (when it has one), and whose ``costs``, when it has no error, are run
    times: a non-empty list of finite numbers > 0. NaN, negative or zero run times cannot
    be measured: such a record would be "the fastest" and win every comparison."""
    if not isinstance(rec, dict) or not isinstance(rec.get("task"), str):
        return False
    error = rec.get("error")
    if error is not None and not isinstance(error, str):
        return False
    config = rec.get("config")
    if config is not None:
        if not isinstance(config, dict):
            return False
        index = config.get("index")
        if "index" in config and (not isinstance(index, int) or isinstance(index, bool)
                                  or index < 0):
            return False
        if "decisions" in config and not isinstance(config["decisions"], list):
            return False
    if error is None:
        costs = rec.get("costs")
        if not isinstance(costs, list) or not costs or not all(
                _number(c) and 0 < c < math.inf for c in costs):
            return False
    return True


def record_mean(rec: dict[str, Any]) -> float:
    costs = rec.get("costs") or []
    if rec.get("error") or not costs:
        return math.inf
    return sum(costs) / len(costs)


def best_records(path: str | Path) -> dict[str, dict[str, Any]]:
    """The fastest successful record of each task in the log."""
    return {key: recs[0] for key, recs in ranked_records(path).items()}


def ranked_records(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """The successful records of each task in the log, fastest first."""
    ranked: dict[str, list[dict[str, Any]]] = {}
    for rec in load(path):
        if record_mean(rec) < math.inf:
            ranked.setdefault(rec["task"], []).append(rec)
    for recs in ranked.values():
        recs.sort(key=record_mean)
    return ranked


class ApplyHistoryBest(DispatchContext):
    """Dispatch context that gives each template the best config in a log."""

    def __init__(self, path: str | Path) -> None:
        p = Path(path)
        if not p.is_file():
            raise TuneError(
                f"apply_history_best: there is no log file {str(path)!r}; give the path that "
                "log_to_file wrote (a mistyped name would silently build the default config)")
        lines = sum(1 for line in p.open() if line.strip())
        self.ranked = ranked_records(path)
        if not lines:
            raise TuneError(f"apply_history_best: the log {str(path)!r} is empty: nothing was "
                            "measured into it yet (tune with callbacks=[log_to_file(...)])")
        if not any(True for _ in load(path)):
            raise TuneError(
                f"apply_history_best: none of the {lines} line(s) of {str(path)!r} is an mlc "
                'tuning record ({"task": ..., "config": ..., "costs": [...], ...}, one per '
                "line, as mlc.tune.callback.log_to_file writes them); is it another tool's log?")
        self.best = {key: recs[0] for key, recs in self.ranked.items()}

    def query(self, key: str, space: Callable[[], ConfigSpace]) -> ConfigSpace | ConfigEntity:
        """The fastest record of ``key`` whose config is a point of the template's space
        (a record written by another version of the template may name a point it no longer
        has); the space's first point if none is."""
        the_space = space()
        for rec in self.ranked.get(key, []):
            index = (rec.get("config") or {}).get("index")
            if isinstance(index, int) and 0 <= index < len(the_space):
                return the_space.get(index)
        return the_space.get(0)


@contextmanager
def apply_history_best(path: str | Path) -> Iterator[ApplyHistoryBest]:
    """Inside this ``with``, calling a template uses the best config measured in ``path``."""
    context = ApplyHistoryBest(path)
    with dispatch(context):
        yield context
