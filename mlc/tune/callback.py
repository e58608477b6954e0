"""Callbacks a tuner calls after every batch: a progress bar and a log file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mlc.tune import record
from mlc.tune.record import MeasureResult


class progress_bar:  # noqa: N801 - AutoTVM's name
    """A tqdm bar (notebook-aware) showing trials and the best GFLOPS so far."""

    def __init__(self, total: int | None = None, prefix: str = "tuning") -> None:
        self.total = total
        self.prefix = prefix
        self._bar: Any = None

    def __call__(
        self, tuner: Any, indexes: Sequence[int], results: Sequence[MeasureResult]
    ) -> None:
        if self._bar is None:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=self.total, desc=self.prefix, unit="trial")
        self._bar.update(len(indexes))
        self._bar.set_postfix(best_gflops=f"{tuner.best_flops / 1e9:.1f}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class log_to_file:  # noqa: N801 - AutoTVM's name
    """Append one JSON record per trial to ``path``. A tuner given this callback resumes from
    the records already in the file and measures none of them again."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def __call__(
        self, tuner: Any, indexes: Sequence[int], results: Sequence[MeasureResult]
    ) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            for i, r in zip(indexes, results):
                line = record.encode(
                    tuner.space.key, tuner.space.config_json(i), tuner.space.trace_json(i), r
                )
                f.write(line + "\n")
