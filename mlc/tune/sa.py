"""Parallel simulated annealing over a space of discrete choices, guided by the model.

Each of ``n_chains`` walkers starts at a random point and, ``n_iter`` times, moves one knob to
a random other choice; a move to a worse predicted score is taken with probability
``exp((new - old) / temperature)``, the temperature cooling linearly to zero. The best
distinct points seen (never ones already measured) are the next batch.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Sequence

import numpy as np

Score = Callable[[Sequence[int]], np.ndarray]


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
) -> list[int]:
    """The ``n_pick`` best-scoring distinct indexes found, none of them in ``exclude``."""
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
    for step in range(n_iter):
        t = temperature * (1 - step / n_iter) + 1e-9
        proposals = [neighbour(p, dims, rng) for p in points]
        new_scores = score(proposals)
        spread = float(np.ptp(new_scores)) or 1.0
        for k, (q, s) in enumerate(zip(proposals, new_scores)):
            offer(q, float(s))
            delta = (float(s) - float(scores[k])) / spread
            if delta >= 0 or rng.random() < math.exp(delta / t):
                points[k], scores[k] = q, s
    return [idx for _, idx in sorted(best, reverse=True)]
