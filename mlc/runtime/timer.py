"""``Module.time_evaluator``: how long one call takes, measured the way TVM does it.

The function is called ``number`` times in a row and the mean is one *result*; this is
repeated ``repeat`` times. With ``min_repeat_ms``, ``number`` first grows until one repeat
lasts at least that long, so that very short kernels are timed over enough calls for the
clock's resolution not to matter. One untimed call warms caches and the thread pool first.
"""

from __future__ import annotations

import math
import operator
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from mlc.errors import ArgumentError


@dataclass(frozen=True)
class TimeResult:
    """Seconds per call: ``results`` holds one mean per repeat."""

    results: tuple[float, ...]
    number: int

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.results) if len(self.results) > 1 else 0.0

    def __repr__(self) -> str:
        ms = [f"{x * 1e3:.4f}" for x in (self.mean, self.median, self.max, self.min, self.std)]
        return (
            "Execution time summary:\n"
            f"{'mean (ms)':>10} {'median (ms)':>12} {'max (ms)':>10} {'min (ms)':>10} "
            f"{'std (ms)':>10}\n"
            f"{ms[0]:>10} {ms[1]:>12} {ms[2]:>10} {ms[3]:>10} {ms[4]:>10}"
        )


def measure(
    call: Callable[[], object], number: int, repeat: int, min_repeat_ms: float
) -> TimeResult:
    """Time ``call`` (already bound to its arguments)."""
    for name, value in (("number", number), ("repeat", repeat)):
        try:
            whole = operator.index(value)  # int, numpy integers; not floats or strings
        except TypeError:
            whole = 0
        if isinstance(value, bool) or whole < 1:
            raise ArgumentError(f"time_evaluator: {name}={value!r} must be a whole number of "
                                f"calls, at least 1 (e.g. {name}=10)")
    number, repeat = operator.index(number), operator.index(repeat)
    if not isinstance(min_repeat_ms, (int, float)) or isinstance(min_repeat_ms, bool) \
            or not 0 <= min_repeat_ms < math.inf:
        raise ArgumentError(f"time_evaluator: min_repeat_ms={min_repeat_ms!r} must be a "
                            "finite number of milliseconds, 0 or more (e.g. min_repeat_ms=100)")
    clock = time.perf_counter
    call()  # warm up
    if min_repeat_ms > 0:
        while True:
            start = clock()
            for _ in range(number):
                call()
            elapsed = clock() - start
            if elapsed * 1e3 >= min_repeat_ms:
                break
            # grow towards the target, at least doubling and at most 1000x per step
            want = min_repeat_ms / 1e3 / max(elapsed, 1e-9) * number * 1.1
            number = int(min(max(2 * number, math.ceil(want)), number * 1000))
    results = []
    for _ in range(repeat):
        start = clock()
        for _ in range(number):
            call()
        results.append((clock() - start) / number)
    return TimeResult(tuple(results), number)
