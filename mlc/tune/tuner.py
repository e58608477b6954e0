"""Tuners: which configs to measure next. Random, grid, and the model-guided XGBTuner.

    tuner = mlc.tune.XGBTuner(task)
    tuner.tune(n_trial=64, measure_option=mlc.tune.measure_option(number=5),
               callbacks=[mlc.tune.callback.progress_bar(),
                          mlc.tune.callback.log_to_file("mm.json")])
    tuner.best_config, tuner.best_flops

A tuner works on any *space*: something with ``dims`` (choices per decision), ``size``,
``build(index) -> PrimFunc``, ``config_json(index)``, ``features(index)`` and a ``key``.
Template tasks and ``tune_tir``'s sampled schedules both provide one.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mlc.errors import MLCError
from mlc.tir.stmt import PrimFunc
from mlc.tune import record
from mlc.tune.measure import MeasureOption, Measurer, whole_number
from mlc.tune.model import XGBoostCostModel, rank_correlation
from mlc.tune.record import MeasureResult
from mlc.tune.sa import anneal
from mlc.tune.space import TuneError

Callback = Callable[["Tuner", Sequence[int], Sequence[MeasureResult]], None]


class TemplateSpace:
    """The search space of a template task."""

    def __init__(self, task: Any) -> None:
        self.task = task
        self.key = task.workload_key
        self.dims = task.config_space.dims
        self.size = len(task.config_space)
        self.target = task.target

    def schedule(self, index: int) -> tuple[Any, list[Any]]:
        return self.task.instantiate(index)  # type: ignore[no-any-return]

    def build(self, index: int) -> PrimFunc:
        s, tensors = self.schedule(index)
        return s.to_prim_func(tensors)  # type: ignore[no-any-return]

    def reference(self) -> PrimFunc:
        from mlc import te

        _, tensors = self.schedule(0)
        return te.create_prim_func(tensors)

    def config_json(self, index: int) -> dict[str, Any]:
        return self.task.config_space.get(index).to_json()  # type: ignore[no-any-return]

    def trace_json(self, index: int) -> Any:
        return None

    def index_of_record(self, rec: dict[str, Any]) -> int | None:
        """The record's point of this space (None if it names none: see record.well_formed)."""
        index = (rec.get("config") or {}).get("index")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < self.size:
            return None
        return index

    def knob_features(self, index: int) -> list[float]:
        return self.task.config_space.get(index).knob_features()  # type: ignore[no-any-return]

    @property
    def flop(self) -> float:
        return float(self.task.flop)


class Tuner:
    """Base class: the measure-update loop, records, callbacks, early stopping."""

    def __init__(self, task_or_space: Any, seed: int | None = None) -> None:
        is_space = hasattr(task_or_space, "dims")
        self.space = task_or_space if is_space else TemplateSpace(task_or_space)
        self.task = getattr(self.space, "task", None)
        self.rng = random.Random(seed)
        self.seed = seed
        self.visited: set[int] = set()
        self.xs: list[int] = []
        self.ys: list[float] = []  # FLOP/s (calls/s for a program of 0 FLOP), 0 for failures
        self.results: list[MeasureResult] = []
        self.best_index: int | None = None
        self.best_flops = 0.0
        self.best_cost = math.inf
        self.confirmed: dict[int, list[float]] = {}  # index -> re-measured run times

    # -- what subclasses decide ----------------------------------------------------------------
    def next_batch(self, n: int) -> list[int]:
        raise NotImplementedError

    def has_next(self) -> bool:
        return len(self.visited) < self.space.size

    def update(self, indexes: Sequence[int], results: Sequence[MeasureResult]) -> None:
        """Hook for learning tuners: called after every batch."""

    # -- the loop ------------------------------------------------------------------------------
    def tune(
        self,
        n_trial: int,
        measure_option: MeasureOption | None = None,
        early_stopping: int | None = None,
        callbacks: Sequence[Callback] = (),
        confirm: int = 0,
    ) -> None:
        """Measure up to ``n_trial`` configs. With ``confirm`` (say 4), the fastest
        ``confirm`` of them are then measured again, in alternating rounds, and the best is
        the fastest of those by the median of its new runs: one measurement of each of 64
        candidates picks the luckiest as often as the best (the winner's curse), and on a
        shared machine luck is a few percent. Re-measuring adds no trials."""
        whole_number("tune: n_trial", n_trial)
        whole_number("tune: confirm", confirm, least=0)
        one = callable(callbacks)  # callbacks=log_to_file("log.json"): one, not in a list
        callbacks = [callbacks] if one else list(callbacks)  # type: ignore[list-item]
        for cb in callbacks:
            if not callable(cb):
                raise TuneError(f"tune: callbacks holds {cb!r}, which is not callable; pass "
                                "e.g. [mlc.tune.callback.log_to_file('log.json')]")
        if early_stopping is not None:
            whole_number("tune: early_stopping", early_stopping)  # trials without a gain
        if measure_option is not None and not isinstance(measure_option, MeasureOption):
            raise TuneError(f"tune: measure_option={measure_option!r} must come from "
                            "mlc.tune.measure_option(number=..., repeat=...)")
        option = measure_option or MeasureOption()
        self._resume(callbacks)
        batch_size = max(option.n_parallel, getattr(self, "batch_size", 8))
        flop = self.space.flop
        with Measurer(self.space.reference(), option, self.space.target, self.space.key) as m:
            trials = 0
            last_improved = 0
            while trials < n_trial and self.has_next():
                indexes = self.next_batch(min(batch_size, n_trial - trials))
                if not indexes:
                    break
                funcs: list[PrimFunc | str] = []
                for i in indexes:
                    self.visited.add(i)
                    try:
                        funcs.append(self.space.build(i))
                    except MLCError as err:  # a config the schedule refuses
                        funcs.append(f"{type(err).__name__}: {err}".splitlines()[0])
                to_run = [f for f in funcs if isinstance(f, PrimFunc)]
                measured = iter(m.measure(to_run)) if to_run else iter(())
                results = [
                    next(measured) if isinstance(f, PrimFunc) else MeasureResult([], f)
                    for f in funcs
                ]
                for i, r in zip(indexes, results):
                    self._account(i, r, flop)
                    if r.ok and r.mean < self.best_cost:
                        last_improved = trials + 1
                    trials += 1
                self.update(indexes, results)
                for cb in callbacks:
                    cb(self, indexes, results)
                if early_stopping is not None and trials - last_improved >= early_stopping:
                    break
            if confirm > 1:
                self._confirm(m, confirm, flop)

    CONFIRM_ROUNDS = 2

    def _confirm(self, m: Measurer, n: int, flop: float) -> None:
        """Re-measure the ``n`` fastest configs in :attr:`CONFIRM_ROUNDS` alternating
        rounds; the best is the one whose new runs have the smallest median (the first
        runs are left out: they are why it looks fast)."""
        measured = sorted(((y, i) for i, y in zip(self.xs, self.ys) if y > 0), reverse=True)
        top = [i for _, i in measured[:n]]
        if len(top) < 2:
            return
        runs: dict[int, list[float]] = {i: [] for i in top}
        for _ in range(self.CONFIRM_ROUNDS):
            for i, r in zip(top, m.measure([self.space.build(i) for i in top])):
                if r.ok:
                    runs[i].extend(r.costs)
        self.confirmed = {i: c for i, c in runs.items() if c}
        if not self.confirmed:
            return
        best = min(self.confirmed, key=lambda i: float(np.median(self.confirmed[i])))
        self.best_index = best
        self.best_cost = float(np.median(self.confirmed[best]))
        self.best_flops = flop / self.best_cost

    def _account(self, index: int, r: MeasureResult, flop: float) -> None:
        self.xs.append(index)
        self.results.append(r)
        flops = flop / r.mean if r.ok and r.mean > 0 else 0.0
        # a program without arithmetic (a copy, a transpose) has 0 FLOP: rank by calls per
        # second then, or every success would look like a failure to the model and confirm
        self.ys.append(flops if flop > 0 else (1.0 / r.mean if r.ok and r.mean > 0 else 0.0))
        if r.ok and r.mean < self.best_cost:
            self.best_cost, self.best_flops, self.best_index = r.mean, flops, index

    def _resume(self, callbacks: Sequence[Callback]) -> None:
        """Read the logs the callbacks write to: their configs are measured already."""
        for cb in callbacks:
            path = getattr(cb, "path", None)
            if path is None:
                continue
            flop = self.space.flop
            for rec in record.load(path):
                if rec.get("task") != self.space.key:
                    continue
                index = self.space.index_of_record(rec)
                if index is None or index in self.visited:
                    continue
                self.visited.add(index)
                costs = rec.get("costs") or []
                self._account(index, MeasureResult(costs, rec.get("error")), flop)
        if self.xs:
            self.update(self.xs, self.results)

    # -- reading results ------------------------------------------------------------------------
    @property
    def best_config(self) -> Any:
        if self.best_index is None:
            return None
        if self.task is not None:
            return self.task.config_space.get(self.best_index)
        return self.space.config_json(self.best_index)

    def best_so_far(self) -> list[float]:
        """Best GFLOPS after each trial (the tuning curve; for a program of 0 FLOP, a copy,
        billions of calls per second)."""
        out, best = [], 0.0
        for y in self.ys:
            best = max(best, y)
            out.append(best / 1e9)
        return out


class RandomTuner(Tuner):
    """Measures configs in a random order, never one twice."""

    def next_batch(self, n: int) -> list[int]:
        out: list[int] = []
        size = self.space.size
        tries = 0
        while len(out) < n and len(self.visited) + len(out) < size and tries < 100 * n:
            tries += 1
            i = self.rng.randrange(size)
            if i not in self.visited and i not in out:
                out.append(i)
        return out


class GridSearchTuner(Tuner):
    """Measures configs in index order."""

    def __init__(self, task_or_space: Any, seed: int | None = None) -> None:
        super().__init__(task_or_space, seed)
        self._next = 0

    def next_batch(self, n: int) -> list[int]:
        out: list[int] = []
        while len(out) < n and self._next < self.space.size:
            if self._next not in self.visited:
                out.append(self._next)
            self._next += 1
        return out


class XGBTuner(Tuner):
    """Model-guided search: xgboost ranks configs, simulated annealing proposes the best-ranked
    unmeasured ones, and a share ``epsilon`` of each batch is random (to keep exploring).

    ``plan_size`` is how many proposals one annealing run makes; the model is refit after
    every batch. ``feature="itervar"`` learns from the loop program, ``"knob"`` from the
    choices themselves."""

    def __init__(
        self,
        task_or_space: Any,
        plan_size: int = 64,
        loss: str = "rank",
        feature: str = "itervar",
        seed: int | None = None,
        epsilon: float = 0.1,
        batch_size: int = 8,
        n_chains: int = 16,
        n_iter: int = 25,
    ) -> None:
        super().__init__(task_or_space, seed)
        if feature not in ("itervar", "knob"):
            raise TuneError(f"feature must be 'itervar' or 'knob', got {feature!r}")
        for name, value, least in (("plan_size", plan_size, 1), ("batch_size", batch_size, 1),
                                   ("n_chains", n_chains, 1), ("n_iter", n_iter, 0)):
            whole_number(f"XGBTuner: {name}", value, least)
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) \
                or not 0.0 <= epsilon <= 1.0:
            raise TuneError(f"XGBTuner: epsilon={epsilon!r} is the share of random picks in "
                            "a batch, a number from 0 to 1 (e.g. 0.1)")
        self.plan_size = plan_size
        self.epsilon = epsilon
        self.batch_size = batch_size
        self.n_chains, self.n_iter = n_chains, n_iter
        self.feature = feature
        self.model = XGBoostCostModel(self._features, loss=loss, seed=seed or 0)
        self._plan: list[int] = []
        self.predictions: list[tuple[float, float]] = []  # (predicted, measured) held out

    def _features(self, index: int) -> list[float]:
        if self.feature == "knob":
            return self.space.knob_features(index)  # type: ignore[no-any-return]
        from mlc.tune.features import LENGTH, itervar_features

        try:
            func = self.space.build(index)
        except MLCError:  # a config the schedule refuses: measured as a failure anyway
            return [0.0] * LENGTH
        return itervar_features(func)

    def next_batch(self, n: int) -> list[int]:
        out: list[int] = []
        while len(out) < n and len(self.visited) + len(out) < self.space.size:
            if self._plan and self.rng.random() >= self.epsilon:
                i = self._plan.pop(0)
            else:
                i = self.rng.randrange(self.space.size)
            if i not in self.visited and i not in out:
                out.append(i)
        return out

    def update(self, indexes: Sequence[int], results: Sequence[MeasureResult]) -> None:
        if self.model.trained:  # held-out check: predicted before this batch was seen
            pred = self.model.predict(list(indexes))
            for p, i in zip(pred, indexes):
                self.predictions.append((float(p), self.ys[self.xs.index(i)]))
        ok = sum(1 for y in self.ys if y > 0)
        if ok < 4:
            return
        self.model.fit(self.xs, self.ys)
        top = [self.xs[k] for k in np.argsort(self.ys)[::-1][: self.n_chains]]
        self._plan = anneal(
            self.model.predict,
            self.space.dims,
            n_pick=self.plan_size,
            exclude=self.visited,
            rng=self.rng,
            n_chains=self.n_chains,
            n_iter=self.n_iter,
            starts=top,
        )

    def model_quality(self) -> float:
        """Rank correlation of predictions (made before measuring) with measured speed."""
        if len(self.predictions) < 2:
            return 0.0
        p, m = zip(*self.predictions)
        return rank_correlation(p, m)
