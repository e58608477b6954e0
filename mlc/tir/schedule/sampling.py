"""Sampling primitives: the random choices that make a schedule a *search space*.

A schedule that calls ``sample_perfect_tile`` and feeds the result to ``split`` does not
describe one program but a family of them. Each call records its choice (its *decision*) in
the trace, so replaying the trace rebuilds the same program, and a tuner explores the space by
replaying the trace with other decisions::

    sch = tir.Schedule(func, seed=0)
    i, j, k = sch.get_loops(sch.get_block("C"))
    f = sch.sample_perfect_tile(i, n=2, max_innermost_factor=16)   # e.g. [64, 16]
    sch.split(i, factors=f)
    sch.trace.decisions                          # {2: [64, 16]}
    sch2 = tir.Schedule(func)
    sch.trace.apply_to_schedule(sch2, decisions={2: [128, 8]})   # another point of the space

Choices come from ``self._rng`` (seeded by ``Schedule(func, seed=...)``), so a seeded schedule
makes the same choices every time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mlc.tir.expr import as_int
from mlc.tir.schedule.base import ScheduleBase
from mlc.tir.schedule.loop_split_fuse import MAX_SPLIT_FACTORS
from mlc.tir.schedule.trace import LoopRV, SampledInt

# Enumerating every tiling is cheap for the extents of a course (a 1024 loop split in 4 has
# 286 tilings); above this many we sample factor by factor instead.
_MAX_ENUMERATED = 20000


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def perfect_tilings(extent: int, n: int, max_innermost_factor: int) -> list[list[int]]:
    """Every list of ``n`` positive factors whose product is ``extent`` and whose last
    factor is at most ``max_innermost_factor``, in lexicographic order."""
    out: list[list[int]] = []

    def go(rest: int, k: int, prefix: list[int]) -> None:
        if len(out) > _MAX_ENUMERATED:
            return
        if k == 1:
            if rest <= max_innermost_factor:
                out.append(prefix + [rest])
            return
        for d in _divisors(rest):
            go(rest // d, k - 1, prefix + [d])

    go(extent, n, [])
    return out


class SamplingPrimitives(ScheduleBase):
    """``sample_perfect_tile`` and ``sample_categorical``."""

    def sample_perfect_tile(
        self,
        loop: LoopRV,
        n: int,
        max_innermost_factor: int = 16,
        decision: Sequence[int] | None = None,
    ) -> list[SampledInt]:
        """``n`` factors whose product is the extent of ``loop`` (which must be constant),
        the innermost at most ``max_innermost_factor``, drawn uniformly among all such
        tilings. Pass them to ``split``::

            for i in range(64):            # sample_perfect_tile(i, n=3) -> e.g. [2, 4, 8]
            i0, i1, i2 = sch.split(i, factors=[2, 4, 8])

        ``decision`` forces the choice (this is how a trace replays)."""
        for_, _ = self._loop_of(loop)
        name = for_.loop_var.name
        extent = as_int(for_.extent)
        if extent is None:
            raise self._error(
                f"sample_perfect_tile: loop {name!r} has the symbolic extent {for_.extent}; "
                "perfect tiles need a constant extent (split it with a constant factor first)",
                for_,
            )
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SPLIT_FACTORS:
            raise self._error(
                f"sample_perfect_tile: n must be an int >= 1 and at most {MAX_SPLIT_FACTORS} "
                f"(the number of loops split makes), got {n!r}", for_)
        if not isinstance(max_innermost_factor, int) or max_innermost_factor < 1:
            raise self._error(
                "sample_perfect_tile: max_innermost_factor must be an int >= 1, got "
                f"{max_innermost_factor!r}",
                for_,
            )
        if decision is not None:
            if not isinstance(decision, (list, tuple)) or any(
                    isinstance(x, bool) or not isinstance(x, int) for x in decision):
                raise self._error(
                    f"sample_perfect_tile: the decision must be a list of {n} ints, got "
                    f"{decision!r}", for_)
            chosen = [int(x) for x in decision]
            product = 1
            for x in chosen:
                product *= x
            if len(chosen) != n or product != extent or min(chosen) < 1:
                raise self._error(
                    f"sample_perfect_tile: the decision {list(decision)} is not a tiling of loop "
                    f"{name!r} into {n} positive factors with product {extent}",
                    for_,
                )
        else:
            # never empty: an innermost factor of 1 is always allowed
            options = perfect_tilings(extent, n, max_innermost_factor)
            chosen = list(self._rng.choice(options))
        values = [self._sampled(x) for x in chosen]
        self._record(
            "sample_perfect_tile",
            {
                "loop": loop,
                "n": n,
                "max_innermost_factor": max_innermost_factor,
                "decision": chosen,
            },
            values,
        )
        return values

    def sample_categorical(
        self,
        candidates: Sequence[int],
        probs: Sequence[float],
        decision: int | None = None,
    ) -> SampledInt:
        """One of ``candidates``, drawn with probabilities ``probs`` (e.g. an unroll depth:
        ``sch.sample_categorical([0, 16, 64], [0.5, 0.25, 0.25])``). ``decision`` is the
        index of the chosen candidate (recorded in the trace)."""
        from mlc.errors import ScheduleError

        if not isinstance(candidates, (list, tuple)) or not isinstance(probs, (list, tuple)):
            raise ScheduleError(
                "sample_categorical: candidates and probs must be lists, e.g. "
                f"sample_categorical([0, 16, 64], [0.5, 0.25, 0.25]); got {candidates!r} and "
                f"{probs!r}"
            )
        cands = list(candidates)
        try:
            weights = [float(p) for p in probs]
        except (TypeError, ValueError):
            raise ScheduleError(
                f"sample_categorical: probabilities must be numbers, got {list(probs)!r}"
            ) from None
        if not cands or len(cands) != len(weights):
            raise ScheduleError(
                f"sample_categorical: need one probability per candidate, got "
                f"{len(cands)} candidates and {len(weights)} probabilities"
            )
        if any(not isinstance(c, int) or isinstance(c, bool) for c in cands):
            raise ScheduleError(f"sample_categorical: candidates must be ints, got {cands}")
        if any(not math.isfinite(w) or w < 0 for w in weights) or sum(weights) <= 0:
            raise ScheduleError(
                "sample_categorical: probabilities must be >= 0, finite and not all 0, got "
                f"{weights}"
            )
        if decision is None:
            index = self._rng.choices(range(len(cands)), weights=weights)[0]
        else:
            if (
                isinstance(decision, bool)
                or not isinstance(decision, int)
                or not (0 <= decision < len(cands))
            ):
                raise ScheduleError(
                    f"sample_categorical: the decision is an index into the {len(cands)} "
                    f"candidates {cands}, got {decision!r}"
                )
            index = decision
        value = self._sampled(cands[index])
        self._record(
            "sample_categorical",
            {"candidates": cands, "probs": weights, "decision": index},
            value,
        )
        return value
