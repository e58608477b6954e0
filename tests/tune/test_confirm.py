"""Re-measuring the fastest candidates before choosing (``confirm``): the winner of one
noisy measurement each is as often the luckiest as the best; the choice is made on new,
alternating runs of the top few."""

from __future__ import annotations

import numpy as np

from mlc import tune
from mlc.tune.tuner import RandomTuner


def test_confirm_remeasures_the_fastest_and_chooses_by_their_new_runs(matmul_task):
    tuner = RandomTuner(matmul_task, seed=0)
    option = tune.measure_option(number=2, repeat=2)
    tuner.tune(12, measure_option=option, confirm=3)
    assert len(tuner.xs) == 12  # re-measuring adds no trials
    first = sorted(((y, i) for i, y in zip(tuner.xs, tuner.ys) if y > 0), reverse=True)
    assert sorted(tuner.confirmed) == sorted(i for _, i in first[:3])
    for runs in tuner.confirmed.values():
        assert len(runs) == tuner.CONFIRM_ROUNDS * option.repeat
    medians = {i: float(np.median(r)) for i, r in tuner.confirmed.items()}
    assert tuner.best_index == min(medians, key=medians.__getitem__)
    assert tuner.best_cost == medians[tuner.best_index]
    assert tuner.best_flops == matmul_task.flop / tuner.best_cost


def test_without_confirm_the_best_is_the_fastest_single_measurement(matmul_task):
    tuner = RandomTuner(matmul_task, seed=0)
    tuner.tune(6, measure_option=tune.measure_option(number=2))
    assert tuner.confirmed == {}
    assert tuner.best_flops == max(tuner.ys)
