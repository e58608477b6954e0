"""Simulated annealing: its moves, and a recorded walk that changes nothing."""

from __future__ import annotations

import math
import random

import numpy as np

from mlc.tune.sa import AnnealStep, anneal, neighbour

DIMS = (8, 8, 2, 1)


def choices(index: int, dims=DIMS) -> list[int]:
    out = []
    for d in dims:
        out.append(index % d)
        index //= d
    return out


def score(points):
    """A smooth landscape with one peak at choices (5, 2, 1, 0)."""
    return np.array([-abs(c[0] - 5) - abs(c[1] - 2) + c[2]
                     for c in (choices(p) for p in points)], dtype="float64")


def test_a_neighbour_changes_exactly_one_knob_and_stays_in_the_space():
    rng = random.Random(0)
    size = math.prod(DIMS)
    for index in range(size):
        for _ in range(4):
            q = neighbour(index, DIMS, rng)
            assert 0 <= q < size
            diff = [a != b for a, b in zip(choices(index), choices(q))]
            assert sum(diff) == 1
            assert not diff[3]  # a knob with one choice never moves


def test_a_space_of_one_point_has_no_neighbour_but_itself():
    assert neighbour(0, (1, 1), random.Random(0)) == 0


def test_recording_changes_neither_the_walk_nor_the_result():
    kwargs = dict(dims=DIMS, n_pick=6, exclude={0, 1, 2}, n_chains=5, n_iter=30)
    plain_rng, recorded_rng = random.Random(7), random.Random(7)
    plain = anneal(score, rng=plain_rng, **kwargs)
    walk: list[AnnealStep] = []
    recorded = anneal(score, rng=recorded_rng, record=walk, **kwargs)
    assert recorded == plain
    assert plain_rng.random() == recorded_rng.random()  # the same random numbers drawn
    assert len(walk) == 31 and [s.step for s in walk] == list(range(31))
    for before, after in zip(walk, walk[1:]):
        assert len(after.points) == 5
        for p, q, took in zip(before.points, after.points, after.accepted):
            moved = sum(a != b for a, b in zip(choices(p), choices(q)))
            assert moved == (1 if took else 0)
        assert list(after.scores) == list(score(after.points))
    assert walk[-1].temperature < walk[1].temperature < 1.0 + 1e-6


def test_the_walk_climbs_a_smooth_landscape():
    walk: list[AnnealStep] = []
    picked = anneal(score, DIMS, n_pick=1, exclude=set(), rng=random.Random(1), n_chains=4,
                    n_iter=60, record=walk)
    assert choices(picked[0])[:3] == [5, 2, 1]  # the peak
    assert max(walk[-1].scores) >= max(walk[0].scores)
