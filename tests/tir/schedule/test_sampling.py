"""Sampling primitives: valid choices, reproducible by seed, decisions replayable."""

from __future__ import annotations

import math

import pytest

from mlc import te, tir
from mlc.errors import ScheduleError
from mlc.tir.schedule.sampling import perfect_tilings


def _func(n: int | None = 64):  # type: ignore[no-untyped-def]
    size = te.var("n") if n is None else n
    A = te.placeholder((size,), name="A")
    B = te.compute((size,), lambda i: A[i] * 2.0, name="B")
    return te.create_prim_func([A, B])


def _loop(sch: tir.Schedule) -> tir.LoopRV:
    return sch.get_loops(sch.get_block("B"))[0]


def test_perfect_tilings_enumerates_all() -> None:
    assert perfect_tilings(12, 2, 16) == [[1, 12], [2, 6], [3, 4], [4, 3], [6, 2], [12, 1]]
    assert perfect_tilings(12, 2, 4) == [[3, 4], [4, 3], [6, 2], [12, 1]]
    # ordered factorizations of 2^6 into 3 factors: C(8, 2)
    assert len(perfect_tilings(64, 3, 64)) == math.comb(8, 2)


@pytest.mark.parametrize("seed", range(20))
def test_sample_perfect_tile_is_a_tiling(seed: int) -> None:
    sch = tir.Schedule(_func(), seed=seed)
    factors = sch.sample_perfect_tile(_loop(sch), n=3, max_innermost_factor=8)
    assert len(factors) == 3 and math.prod(factors) == 64 and factors[-1] <= 8
    sch.split(_loop(sch), factors=factors)
    assert len(sch.get_loops(sch.get_block("B"))) == 3


def test_sample_perfect_tile_reproducible_and_covers_space() -> None:
    seen = set()
    for seed in range(60):
        a = tir.Schedule(_func(), seed=seed)
        b = tir.Schedule(_func(), seed=seed)
        fa = a.sample_perfect_tile(_loop(a), n=2, max_innermost_factor=16)
        fb = b.sample_perfect_tile(_loop(b), n=2, max_innermost_factor=16)
        assert list(fa) == list(fb)
        seen.add(tuple(fa))
    # all five tilings of 64 into two factors with inner <= 16 show up in 60 draws
    assert seen == {(64, 1), (32, 2), (16, 4), (8, 8), (4, 16)}


def test_sample_perfect_tile_decision_and_trace() -> None:
    sch = tir.Schedule(_func(), seed=1)
    factors = sch.sample_perfect_tile(_loop(sch), n=2, decision=[16, 4])
    assert list(factors) == [16, 4]
    assert sch.trace.decisions == {2: [16, 4]}
    kind, inputs, outputs = sch.trace.as_json()[-1]
    assert kind == "sample_perfect_tile"
    assert inputs["decision"] == [16, 4] and inputs["n"] == 2
    assert outputs == [f.rv_id for f in factors]


def test_sample_perfect_tile_errors() -> None:
    sch = tir.Schedule(_func(None))
    with pytest.raises(ScheduleError, match="symbolic extent n; perfect tiles need a constant"):
        sch.sample_perfect_tile(_loop(sch), n=2)
    sch = tir.Schedule(_func())
    with pytest.raises(ScheduleError, match=r"decision \[3, 4\] is not a tiling of loop 'i'"):
        sch.sample_perfect_tile(_loop(sch), n=2, decision=[3, 4])
    with pytest.raises(ScheduleError, match="n must be an int >= 1"):
        sch.sample_perfect_tile(_loop(sch), n=0)


def test_sample_categorical() -> None:
    counts = {0: 0, 16: 0, 64: 0}
    for seed in range(200):
        sch = tir.Schedule(_func(), seed=seed)
        v = sch.sample_categorical([0, 16, 64], [0.5, 0.5, 0.0])
        counts[int(v)] += 1
    assert counts[64] == 0 and counts[0] > 50 and counts[16] > 50
    sch = tir.Schedule(_func(), seed=0)
    v = sch.sample_categorical([0, 16, 64], [1, 1, 1], decision=2)
    assert v == 64
    assert sch.trace.as_json()[-1] == [
        "sample_categorical",
        {"candidates": [0, 16, 64], "probs": [1.0, 1.0, 1.0], "decision": 2},
        [v.rv_id],
    ]


@pytest.mark.parametrize(
    ("cands", "probs", "decision", "message"),
    [
        ([1, 2], [1.0], None, "one probability per candidate"),
        ([1, 2], [0.0, 0.0], None, "not all 0"),
        ([1, 2], [-1.0, 2.0], None, "must be >= 0"),
        ([1, 2], [1.0, 1.0], 5, "decision is an index"),
        ([1.5, 2], [1.0, 1.0], None, "candidates must be ints"),
    ],
)
def test_sample_categorical_errors(
    cands: list, probs: list, decision: int | None, message: str
) -> None:
    sch = tir.Schedule(_func())
    with pytest.raises(ScheduleError, match=message):
        sch.sample_categorical(cands, probs, decision=decision)
