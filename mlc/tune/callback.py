"""Callbacks a tuner calls after every batch: a progress bar and a log file."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mlc.errors import TuneError
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
        # found out now, not after the first batch has been measured
        if self.path.is_dir():
            raise TuneError(f"log_to_file({str(path)!r}) is a folder; give a file in it, "
                            f"e.g. {str(self.path / 'tuning_log.json')!r}")
        parent = self.path.parent
        if parent.exists() and not parent.is_dir():
            raise TuneError(f"log_to_file({str(path)!r}): {str(parent)!r} is a file, not a "
                            "folder")
        if (parent.exists() and not os.access(parent, os.W_OK)) or (
                self.path.exists() and not os.access(self.path, os.W_OK)):
            raise TuneError(f"log_to_file({str(path)!r}): cannot write there; give a path "
                            "in a folder of yours")

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
