"""Counts of trials, calls and seconds that are not counts: refused with a message naming
the argument. ``time_evaluator(number=0)`` timed one call and reported it; ``tune_tir`` with
0 trials said "no candidate ran successfully; errors seen: []", and with ``None`` or "4"
raised Python's TypeError; ``measure_option(timeout=-1)`` was accepted."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tune
from mlc.errors import ArgumentError, TuneError


def matmul():
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), "k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return [A, B, C]


@pytest.mark.parametrize("kw", [dict(number=0), dict(number=-1), dict(repeat=0),
                                dict(number=1.5), dict(number="3"), dict(number=True),
                                dict(min_repeat_ms=-5), dict(min_repeat_ms="1")])
def test_time_evaluator_refuses_what_is_not_a_count(kw: dict) -> None:
    args = matmul()
    f = mlc.build(te.create_schedule(args[-1].op), args)
    arrays = [np.ones((16, 16), "float32") for _ in range(3)]
    name = next(iter(kw))
    with pytest.raises(ArgumentError, match=f"time_evaluator: {name}="):
        f.time_evaluator(**kw)(*arrays)


def test_time_evaluator_takes_numpy_integers() -> None:
    args = matmul()
    f = mlc.build(te.create_schedule(args[-1].op), args)
    arrays = [np.ones((16, 16), "float32") for _ in range(3)]
    result = f.time_evaluator(number=np.int64(3), repeat=np.int32(2))(*arrays)
    assert len(result.results) == 2


@pytest.mark.parametrize("trials", [0, -1, 2.5, "4", None])
def test_tune_tir_refuses_what_is_not_a_count_of_trials(trials: object) -> None:
    with pytest.raises(TuneError, match="tune_tir: max_trials=.* must be a whole number"):
        tune.tune_tir(te.create_prim_func(matmul()), trials, progress=False)  # type: ignore


@pytest.mark.parametrize("kw, named", [(dict(number=0), "number"), (dict(repeat=-2), "repeat"),
                                       (dict(timeout=-1), "timeout"), (dict(timeout=0), "timeout"),
                                       (dict(min_repeat_ms=-1), "min_repeat_ms"),
                                       (dict(n_parallel=0), "n_parallel")])
def test_measure_option_refuses_what_is_not_a_count(kw: dict, named: str) -> None:
    with pytest.raises(TuneError, match=f"measure_option: {named}="):
        tune.measure_option(**kw)
