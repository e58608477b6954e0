"""MetaSchedule-style tuning: a stochastic schedule is a search space.

A *space* is a function ``sch -> None`` that schedules with ``sch.sample_perfect_tile`` and
``sch.sample_categorical`` instead of fixed numbers. Running it once records a trace; the
trace's sampling decisions are the coordinates of the space, and any point is built by
replaying the trace with other decisions::

    def space(sch):
        i, j, k = sch.get_loops(sch.get_block("C"))
        i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2))
        ...
    best = mlc.tune.tune_tir(func, max_trials=64, space=space)
    print(best.trace); mlc.build(best.mod)

Without ``space`` the default one (:func:`mlc.tune.tiling.default_space`) is used.

A point is built by running the space function again with its decisions forced, so the
space may branch on a sampled value (``if pack: sch.cache_read(...)``) or compute a factor
from one. Every point must make the same sampling calls in the same order: sample first,
then schedule.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mlc.tir.schedule import Schedule
from mlc.tir.schedule.sampling import perfect_tilings
from mlc.tir.schedule.trace import LoopRV, SampledInt, Trace
from mlc.tir.stmt import For, PrimFunc
from mlc.tune.features import flop_count
from mlc.tune.measure import MeasureOption, whole_number
from mlc.tune.space import TuneError

SpaceFn = Callable[[Schedule], None]


class _Probe(Schedule):
    """A Schedule that also notes every choice a sampling instruction could have made."""

    def __init__(self, func: PrimFunc, seed: int | None = None) -> None:
        super().__init__(func, seed=seed)
        self.choices: list[list[Any]] = []

    def sample_perfect_tile(
        self, loop: LoopRV, n: int, max_innermost_factor: int = 16, decision: Any = None
    ) -> list[SampledInt]:
        node = self.get(loop)
        assert isinstance(node, For)
        extent = getattr(node.extent, "value", None)
        if extent is None:
            raise TuneError(f"sample_perfect_tile needs a constant loop extent, got {node.extent}")
        self.choices.append(perfect_tilings(extent, n, max_innermost_factor))
        return super().sample_perfect_tile(loop, n, max_innermost_factor, decision)

    def sample_categorical(
        self, candidates: Sequence[int], probs: Sequence[float], decision: Any = None
    ) -> SampledInt:
        self.choices.append(list(range(len(candidates))))
        return super().sample_categorical(candidates, probs, decision)


class _Forced(Schedule):
    """A Schedule whose sampling instructions return the given decisions, in order."""

    def __init__(self, func: PrimFunc, decisions: Sequence[Any]) -> None:
        super().__init__(func)
        self._decisions = list(decisions)

    def _next(self) -> Any:
        if not self._decisions:
            raise TuneError("the space function sampled more often than when it was probed; "
                            "make the same sampling calls for every point (sample first)")
        return self._decisions.pop(0)

    def sample_perfect_tile(
        self, loop: LoopRV, n: int, max_innermost_factor: int = 16, decision: Any = None
    ) -> list[SampledInt]:
        return super().sample_perfect_tile(loop, n, max_innermost_factor, self._next())

    def sample_categorical(
        self, candidates: Sequence[int], probs: Sequence[float], decision: Any = None
    ) -> SampledInt:
        return super().sample_categorical(candidates, probs, self._next())


class SampledSpace:
    """The points of a stochastic schedule: one coordinate per sampling instruction."""

    def __init__(self, func: PrimFunc, space: SpaceFn, target: Any = "llvm", seed: int = 0) -> None:
        if not callable(space):
            raise TuneError(f"space={space!r} must be a function of a tir.Schedule that "
                            "samples (e.g. mlc.tune.tiling.default_space), or None")
        probe = _Probe(func, seed=seed)
        space(probe)
        self.func = func
        self.space = space
        self.target = target
        self.trace = probe.trace
        self.sample_insts = [k for k, inst in enumerate(probe.trace.insts)
                             if "decision" in inst.inputs]
        self.choices = probe.choices
        if len(self.choices) != len(self.sample_insts):
            raise TuneError("the space function sampled through something other than "
                            "sample_perfect_tile / sample_categorical")
        self.dims = [len(c) for c in self.choices]
        self.size = math.prod(self.dims) if self.dims else 1
        # the whole program, signature (dtypes, shapes) included, in a digest: two programs
        # alike in their first lines (a float32 and a float64 matmul) are different tasks
        digest = hashlib.sha256(str(func).encode()).hexdigest()[:16]
        self.key = json.dumps(["tir", func.name, str(func.body)[:200], digest,
                               self.trace.as_python()])
        self._flop: float | None = None

    def decisions(self, index: int) -> dict[int, Any]:
        out, rest = {}, index
        for k, inst_idx in enumerate(self.sample_insts):
            out[inst_idx] = self.choices[k][rest % self.dims[k]]
            rest //= self.dims[k]
        return out

    def index_of_decisions(self, decisions: Sequence[Any]) -> int | None:
        """The point whose decisions these are; None if they are not one (another number of
        decisions, or a value this space never samples)."""
        if not isinstance(decisions, list) or len(decisions) != len(self.choices):
            return None
        index, scale = 0, 1
        for k, d in enumerate(decisions):
            try:
                c = self.choices[k].index(d)
            except ValueError:
                return None
            index += c * scale
            scale *= self.dims[k]
        return index

    def schedule(self, index: int) -> Schedule:
        """The point ``index``: the space function run again with its decisions forced."""
        sch = _Forced(self.func, list(self.decisions(index).values()))
        self.space(sch)
        return sch

    def build(self, index: int) -> PrimFunc:
        return self.schedule(index).mod

    def reference(self) -> PrimFunc:
        return self.func

    def config_json(self, index: int) -> dict[str, Any]:
        return {"index": index, "decisions": list(self.decisions(index).values())}

    def trace_json(self, index: int) -> Any:
        return self.schedule(index).trace.as_json()

    def index_of_record(self, rec: dict[str, Any]) -> int | None:
        cfg = rec.get("config") or {}
        if "decisions" in cfg:
            return self.index_of_decisions(cfg["decisions"])
        return None

    def knob_features(self, index: int) -> list[float]:
        feats: list[float] = []
        for d in self.decisions(index).values():
            if isinstance(d, list):
                feats += [math.log2(max(int(x), 1)) for x in d]
            else:
                feats.append(float(d))
        return feats

    @property
    def flop(self) -> float:
        if self._flop is None:
            self._flop = flop_count(self.func)
        return self._flop


def tune_tir(
    mod: PrimFunc,
    max_trials: int = 64,
    space: SpaceFn | None = None,
    target: Any = "llvm",
    work_dir: str | Path | None = None,
    measure_option: MeasureOption | None = None,
    seed: int = 0,
    tuner: str = "xgb",
    feature: str = "knob",
    callbacks: Sequence[Any] = (),
    progress: bool = True,
    confirm: int | None = None,
) -> Schedule:
    """Search the decisions of ``space`` (default: multi-level tiling) with ``max_trials``
    measurements and return the best Schedule found (its ``trace`` replays it).

    ``work_dir`` keeps a JSON-lines log (``tuning_log.json``); tuning again with the same
    ``work_dir`` resumes and measures nothing twice. ``feature="knob"`` (the default) lets
    the model learn from the sampled decisions themselves, which is cheap;
    ``feature="itervar"`` learns from the loop program of every candidate, which replays the
    trace for each point the annealer visits (slower in Python, sometimes better).

    ``confirm``: how many of the fastest candidates are measured again before the best is
    chosen (see :meth:`mlc.tune.Tuner.tune`); by default one per 16 trials, at most 4."""
    from mlc.tune import callback as cb
    from mlc.tune.tiling import default_space
    from mlc.tune.tuner import RandomTuner, XGBTuner

    whole_number("tune_tir: max_trials", max_trials)
    sampled = SampledSpace(mod, space or default_space, target=target, seed=seed)
    if tuner == "xgb":
        t: Any = XGBTuner(sampled, seed=seed, feature=feature)
    elif tuner == "random":
        t = RandomTuner(sampled, seed=seed)
    else:
        raise TuneError(f"tuner must be 'xgb' or 'random', got {tuner!r}")
    callbacks = list(callbacks)
    if work_dir is not None:
        if Path(work_dir).exists() and not Path(work_dir).is_dir():
            raise TuneError(f"tune_tir: work_dir={str(work_dir)!r} is a file; it must be a "
                            "folder (tune_tir keeps tuning_log.json in it)")
        callbacks.append(cb.log_to_file(Path(work_dir) / "tuning_log.json"))
    bar = cb.progress_bar(total=max_trials, prefix="tune_tir") if progress else None
    if bar is not None:
        callbacks.append(bar)
    try:
        if confirm is None:
            confirm = min(4, max_trials // 16)
        t.tune(max_trials, measure_option=measure_option, callbacks=callbacks,
               confirm=confirm)
    finally:
        if bar is not None:
            bar.close()
    if t.best_index is None:
        errors = {r.error for r in t.results if r.error}
        raise TuneError(f"no candidate ran successfully; errors seen: {sorted(errors)[:3]}")
    best = sampled.schedule(t.best_index)
    best.tuner = t  # type: ignore[attr-defined]
    return best


__all__ = ["tune_tir", "SampledSpace", "Trace"]
