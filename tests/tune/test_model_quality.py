"""The model-quality measures a notebook reports on held-out configurations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mlc.tune.model import pairwise_accuracy, rank_correlation


def test_pairwise_accuracy_by_hand():
    assert pairwise_accuracy([1, 2, 3], [10, 20, 30]) == 1.0
    assert pairwise_accuracy([3, 2, 1], [10, 20, 30]) == 0.0
    # pairs (0,1) tied in the prediction: half right; (0,2), (1,2) right
    assert pairwise_accuracy([1, 1, 3], [10, 20, 30]) == pytest.approx(2.5 / 3)
    # only the order counts, not the scale
    assert pairwise_accuracy([-100, 0, 1e6], [1, 2, 3]) == 1.0


def test_measured_ties_and_close_pairs_are_left_out():
    assert math.isnan(pairwise_accuracy([1, 2], [5, 5]))
    # 10 and 10.5 are within a 10% margin: only the two pairs with 30 count
    assert pairwise_accuracy([2, 1, 3], [10, 10.5, 30], margin=0.1) == 1.0
    assert pairwise_accuracy([2, 1, 3], [10, 10.5, 30]) == pytest.approx(2 / 3)


def test_pairwise_accuracy_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="one value per config"):
        pairwise_accuracy([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="one value per config"):
        pairwise_accuracy(np.zeros((2, 2)), np.zeros((2, 2)))


def test_empty_and_single_inputs():
    assert math.isnan(pairwise_accuracy([], []))
    assert math.isnan(pairwise_accuracy([1.0], [2.0]))
    assert rank_correlation([1.0], [2.0]) == 0.0


def test_rank_correlation_is_one_for_the_same_order():
    assert rank_correlation([1, 5, 9], [0.1, 0.2, 0.3]) == pytest.approx(1.0)
    assert rank_correlation([9, 5, 1], [0.1, 0.2, 0.3]) == pytest.approx(-1.0)


def test_nan_scores_give_nan_accuracy():
    assert math.isnan(pairwise_accuracy([np.nan, 1.0], [1.0, 2.0]))


def test_a_negative_margin_is_refused():
    with pytest.raises(ValueError, match="0 or more"):
        pairwise_accuracy([1, 2], [1, 2], margin=-0.1)
    with pytest.raises(ValueError, match="0 or more"):
        pairwise_accuracy([1, 2], [1, 2], margin=float("nan"))
