"""Parallel simulated annealing over a space of discrete choices, guided by the model.

Each of ``n_chains`` walkers starts at a random point and, ``n_iter`` times, moves one knob to
a random other choice; a move to a worse predicted score is taken with probability
``exp((new - old) / temperature)``, the temperature cooling linearly to zero. The best
distinct points seen (never ones already measured) are the next batch.

Pass ``record=[]`` to see the walk: after the start and after every step it receives an
:class:`AnnealStep` (every chain's point and predicted score). Recording draws no random
numbers, so the walk and the result are the same with it or without it.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mlc.errors import TuneError

Score = Callable[[Sequence[int]], np.ndarray]


@dataclass(frozen=True)
class AnnealStep:
    """Where the chains stand after ``step`` moves (step 0: the starting points)."""

    step: int
    temperature: float
    points: tuple[int, ...]  # each chain's current point (a config index)
    scores: tuple[float, ...]  # the model's score of each point
    accepted: tuple[bool, ...]  # whether each chain took its proposed move (all True at 0)


def neighbour(index: int, dims: Sequence[int], rng: random.Random) -> int:
    """``index`` with one knob changed to another choice."""
    choices, rest = [], index
    for d in dims:
        choices.append(rest % d)
        rest //= d
    movable = [k for k, d in enumerate(dims) if d > 1]
    if not movable:
        return index
    k = rng.choice(movable)
    new = rng.randrange(dims[k] - 1)
    choices[k] = new if new < choices[k] else new + 1
    out, scale = 0, 1
    for c, d in zip(choices, dims):
        out += c * scale
        scale *= d
    return out


def anneal(
    score: Score,
    dims: Sequence[int],
    n_pick: int,
    exclude: set[int],
    rng: random.Random,
    n_chains: int = 32,
    n_iter: int = 60,
    temperature: float = 1.0,
    starts: Sequence[int] = (),
    record: list[AnnealStep] | None = None,
) -> list[int]:
    """The ``n_pick`` best-scoring distinct indexes found, none of them in ``exclude``.
    ``record``, a list, receives the walk (one :class:`AnnealStep` per step)."""
    if any(not isinstance(d, int) or d < 1 for d in dims):
        raise TuneError(f"anneal: every knob needs at least one choice, got dims {list(dims)}")
    if not isinstance(n_chains, int) or n_chains < 1:
        raise TuneError(f"anneal: n_chains={n_chains!r} must be an int >= 1")
    size = math.prod(dims)
    points = list(starts)[:n_chains]
    while len(points) < n_chains:
        points.append(rng.randrange(size))
    scores = score(points)
    best: list[tuple[float, int]] = []
    seen: set[int] = set()

    def offer(idx: int, s: float) -> None:
        if idx in exclude or idx in seen:
            return
        seen.add(idx)
        if len(best) < n_pick:
            heapq.heappush(best, (s, idx))
        elif s > best[0][0]:
            heapq.heapreplace(best, (s, idx))

    for p, s in zip(points, scores):
        offer(p, float(s))
    if record is not None:
        record.append(AnnealStep(0, temperature, tuple(points),
                                 tuple(float(s) for s in scores), (True,) * len(points)))
    for step in range(n_iter):
        t = temperature * (1 - step / n_iter) + 1e-9
        proposals = [neighbour(p, dims, rng) for p in points]
        new_scores = score(proposals)
        spread = float(np.ptp(new_scores)) or 1.0
        accepted = []
        for k, (q, s) in enumerate(zip(proposals, new_scores)):
            offer(q, float(s))
            delta = (float(s) - float(scores[k])) / spread
            take = delta >= 0 or rng.random() < math.exp(delta / t)
            if take:
                points[k], scores[k] = q, s
            accepted.append(take)
        if record is not None:
            record.append(AnnealStep(step + 1, t, tuple(points),
                                     tuple(float(s) for s in scores), tuple(accepted)))
    return [idx for _, idx in sorted(best, reverse=True)]
