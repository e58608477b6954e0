"""The learned cost model: xgboost trained to rank candidates by measured speed.

Only the *order* of candidates matters to the search, so the default objective is
xgboost's pairwise ranking (``loss="rank"``); ``loss="reg"`` regresses normalised
throughput instead. The model is refit after every batch of measurements.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mlc.errors import TuneError

FeatureFn = Callable[[int], list[float]]


class XGBoostCostModel:
    """Predicts a score per config index (higher = faster) from features of that config."""

    def __init__(self, feature_fn: FeatureFn, loss: str = "rank", seed: int = 0) -> None:
        if loss not in ("rank", "reg"):
            raise TuneError(f"loss must be 'rank' or 'reg', got {loss!r}")
        self.feature_fn = feature_fn
        self.loss = loss
        self.seed = seed
        self._booster: Any = None
        self._cache: dict[int, list[float]] = {}

    def features(self, indexes: Sequence[int]) -> np.ndarray:
        rows = []
        for i in indexes:
            if i not in self._cache:
                self._cache[i] = self.feature_fn(i)
            rows.append(self._cache[i])
        if not rows:
            return np.zeros((0, 0), dtype="float32")
        lengths = {len(r) for r in rows}
        if len(lengths) > 1:
            raise TuneError(
                f"the feature function gave vectors of different lengths {sorted(lengths)}; "
                "every config needs the same number of features")
        return np.asarray(rows, dtype="float32").reshape(len(rows), -1)

    @property
    def trained(self) -> bool:
        return self._booster is not None

    def fit(self, indexes: Sequence[int], throughputs: Sequence[float]) -> None:
        """Train on measured configs; ``throughputs`` are FLOP/s (0 for failed ones)."""
        import xgboost as xgb

        if len(indexes) != len(throughputs):
            raise TuneError(f"fit needs one throughput per config: got {len(indexes)} configs "
                            f"and {len(throughputs)} throughputs")
        x = self.features(indexes)
        y = np.asarray(throughputs, dtype="float64")
        # a NaN, infinite or negative throughput is no measurement: count it as a failure
        y = np.where(np.isfinite(y) & (y > 0), y, 0.0)
        if len(x) < 2 or y.max() <= 0:
            return
        y = y / y.max()
        params = {
            "max_depth": 6,
            "eta": 0.3,
            "gamma": 0.0001,
            "min_child_weight": 1,
            "subsample": 1.0,
            "nthread": 1,
            "seed": self.seed,
            "verbosity": 0,
            "objective": "rank:pairwise" if self.loss == "rank" else "reg:squarederror",
        }
        # one thread, as for training: a DMatrix built on every core costs more than the few
        # rows it holds when other processes (the measuring workers) share the machine
        dtrain = xgb.DMatrix(x, label=y, nthread=1)
        if self.loss == "rank":
            dtrain.set_group([len(y)])
        self._booster = xgb.train(params, dtrain, num_boost_round=60)

    def predict(self, indexes: Sequence[int]) -> np.ndarray:
        """Scores for configs (arbitrary scale; higher is better). Untrained: zeros."""
        if self._booster is None:
            return np.zeros(len(indexes))
        import xgboost as xgb

        rows = xgb.DMatrix(self.features(indexes), nthread=1)
        return np.asarray(self._booster.predict(rows))


def rank_correlation(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """Spearman's rank correlation (the model's quality on held-out trials)."""
    p = np.argsort(np.argsort(np.asarray(predicted)))
    m = np.argsort(np.argsort(np.asarray(measured)))
    if len(p) < 2 or p.std() == 0 or m.std() == 0:
        return 0.0
    return float(np.corrcoef(p, m)[0, 1])


def pairwise_accuracy(predicted: Sequence[float], measured: Sequence[float],
                      margin: float = 0.0) -> float:
    """The share of pairs of configs that ``predicted`` puts in the measured order: what a
    search that keeps the better of two candidates needs. Pairs whose measured values differ
    by no more than ``margin`` (relative to the larger) are left out: timing noise orders
    them. A tie in the prediction counts as half right. NaN when no pair is left."""
    p = np.asarray(predicted, dtype="float64")
    m = np.asarray(measured, dtype="float64")
    if p.shape != m.shape or p.ndim != 1:
        raise ValueError(f"predicted and measured need one value per config each; got "
                         f"shapes {p.shape} and {m.shape}")
    if not margin >= 0.0:
        raise ValueError(f"margin is a relative gap in speed, 0 or more; got {margin}")
    i, j = np.triu_indices(len(m), k=1)
    gap = np.abs(m[i] - m[j])
    keep = gap > margin * np.maximum(np.abs(m[i]), np.abs(m[j]))
    if margin == 0.0:
        keep &= gap > 0
    if not keep.any():
        return float("nan")
    agree = np.sign(p[i] - p[j])[keep] * np.sign(m[i] - m[j])[keep]
    return float(np.mean((agree + 1) / 2))
