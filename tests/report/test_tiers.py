"""Per-tier accuracy on the devices' own local test data, against hand counts."""

import math

import numpy as np
import torch

from fedfit.data.datasets import ArrayDataset
from fedfit.report import local_accuracy_by_tier, worst_tier_gap
from fedfit.report.tiers import (
    binomial_standard_error,
    gap_standard_error,
    label_counts_by_tier,
    label_weighted_accuracy,
    label_weighted_standard_error,
    noise_worst_gap,
)


def _set(labels: list[int]) -> ArrayDataset:
    return ArrayDataset(torch.zeros(len(labels), 1), torch.tensor(labels, dtype=torch.int64))


def test_tier_accuracy_pools_its_devices_and_fleet_pools_all() -> None:
    # A "model" that always predicts class 0.
    def always_zero(x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
        return float((y == 0).float().mean()), 0.0

    tiers = ["a", "a", "b", "c"]
    tests = [_set([0, 0, 1]), _set([0]), _set([1, 1, 0, 1]), _set([])]

    out = local_accuracy_by_tier(tiers, tests, always_zero)

    assert out == {"a": 3 / 4, "b": 1 / 4, "fleet": 4 / 8}  # c has no local test data
    assert worst_tier_gap(out) == 0.25


def test_binomial_standard_error_is_sqrt_p_q_over_n() -> None:
    # p = 0.8 on 100 samples: sqrt(0.8 * 0.2 / 100) = 0.04.
    assert math.isclose(binomial_standard_error(0.8, 100), 0.04)
    assert binomial_standard_error(0.5, 0) == math.inf


def test_gap_standard_error_counts_the_tier_inside_the_fleet() -> None:
    # Tier: 0.5 on 25 samples. Fleet: 0.7 on 100, so the other 75 score (70 - 12.5) / 75 = 23/30.
    # gap = (75/100)(23/30 - 1/2) = 0.2; var = 0.75^2 (23/30 * 7/30 / 75 + 0.25 / 25).
    rest = (23 / 30) * (7 / 30) / 75
    expected = 0.75 * math.sqrt(rest + 0.01)

    assert math.isclose(gap_standard_error(0.5, 25, 0.7, 100), expected)


def test_label_counts_by_tier_sums_each_tiers_devices() -> None:
    tiers = ["b", "a", "b"]
    sets = [_set([0, 2, 2]), _set([1]), _set([2])]

    assert label_counts_by_tier(tiers, sets, 3) == {"a": [0, 1, 0], "b": [1, 0, 3]}


def test_label_weighted_accuracy_and_its_error_by_hand() -> None:
    # Classes scored 0.9 (on 100 samples) and 0.6 (on 40); a tier with labels 1:3.
    # accuracy = (1 * 0.9 + 3 * 0.6) / 4 = 0.675;
    # variance = (1/4)^2 * 0.09/100 + (3/4)^2 * 0.24/40.
    accuracy = label_weighted_accuracy([0.9, 0.6], [1, 3])
    error = label_weighted_standard_error([0.9, 0.6], [100, 40], [1, 3])

    assert math.isclose(accuracy, 0.675)
    assert math.isclose(error, math.sqrt(0.0625 * 0.0009 + 0.5625 * 0.006))


def test_label_weighted_error_ignores_classes_the_tier_lacks() -> None:
    # The tier has no class-1 samples, so class 1's missing test data does not matter.
    assert math.isclose(label_weighted_standard_error([0.5, 0.0], [25, 0], [4, 0]), 0.1)


def test_noise_worst_gap_of_two_single_sample_tiers() -> None:
    # Two tiers of one sample each, p = 0.5: with probability 1/2 exactly one is right, the
    # fleet scores 0.5 and the worst tier 0 (gap 0.5); otherwise the gap is 0. Mean 0.25.
    gaps = noise_worst_gap({"a": 1, "b": 1}, 0.5, np.random.default_rng(0), draws=40_000)

    assert set(np.unique(gaps)) <= {0.0, 0.5}
    assert abs(gaps.mean() - 0.25) < 0.01  # 4.5 standard errors of the Monte-Carlo mean


def test_noise_worst_gap_is_zero_for_a_perfect_model() -> None:
    assert noise_worst_gap({"a": 30, "b": 100}, 1.0, np.random.default_rng(0), draws=50).max() == 0.0
