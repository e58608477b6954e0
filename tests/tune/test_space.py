"""Search spaces: knobs, enumeration, reproducible sampling, dispatch."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import tune
from mlc.examples.tuning import MATMUL
from mlc.tune.space import split_factors
from mlc.tune.tuner import RandomTuner


def test_split_factors_lists_every_exact_factorization():
    assert split_factors(8, 2, "factors", None) == [(-1, 1), (-1, 2), (-1, 4), (-1, 8)]
    assert split_factors(12, 3, "factors", 4)[:3] == [(-1, 1, 1), (-1, 1, 2), (-1, 1, 3)]
    assert (-1, 2, 2) in split_factors(12, 3, "factors", None)
    assert (-1, 5) not in split_factors(12, 2, "factors", None)


def test_config_space_size_is_the_product_of_the_knobs(matmul_task):
    space = matmul_task.config_space
    # 16 has divisors 1, 2, 4, 8, 16: five splits per axis, two vectorize choices
    assert space.dims == [5, 5, 2]
    assert len(space) == 50
    text = repr(space)
    assert "tile_y (split, 5 choices)" in text and "vec (other, 2 choices)" in text


def test_points_are_numbered_mixed_radix(matmul_task):
    space = matmul_task.config_space
    cfg = space.get(1 + 5 * 2 + 25 * 1)
    assert cfg["tile_y"].size == (-1, 2)
    assert cfg["tile_x"].size == (-1, 4)
    assert cfg["vec"].val == 1
    assert space.index_of(cfg.choices) == cfg.index
    with pytest.raises(tune.TuneError, match="outside the space"):
        space.get(50)


def test_every_point_builds_and_matches_numpy(matmul_task):
    a = np.random.rand(16, 16).astype("float32")
    b = np.random.rand(16, 16).astype("float32")
    for index in (0, 7, 23, 49):
        s, args = matmul_task.instantiate(index)
        c = np.zeros((16, 16), "float32")
        mlc.build(s, args)(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_random_tuner_order_is_reproducible_by_seed(matmul_task):
    first = RandomTuner(matmul_task, seed=3).next_batch(10)
    again = RandomTuner(matmul_task, seed=3).next_batch(10)
    other = RandomTuner(matmul_task, seed=4).next_batch(10)
    assert first == again
    assert first != other
    assert len(set(first)) == 10


def test_unknown_template_and_knob_are_named():
    with pytest.raises(tune.TuneError, match="no template named 'nope'"):
        tune.create_task("nope", args=())
    with pytest.raises(tune.TuneError, match="inside a @mlc.tune.template"):
        tune.get_config()


def test_template_outside_tuning_uses_the_first_point():
    matmul = tune.task._TEMPLATES[MATMUL]
    s, args = matmul(16, "float32")
    text = str(s.to_prim_func(args))
    assert "vectorized" not in text
