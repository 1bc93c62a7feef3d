"""Per-tier accuracy on the devices' own local test data, against hand counts."""

import torch

from fedfit.data.datasets import ArrayDataset
from fedfit.report import local_accuracy_by_tier, worst_tier_gap


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
