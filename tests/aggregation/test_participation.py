"""Participation weighting (FedAU's ω): the interval estimate by hand, and its place in the average."""

from __future__ import annotations

import pytest
import torch

from fedfit.aggregation import AggregationRule, Arrival, MeanInterval, StalenessDiscount, aggregate, mean_interval
from fedfit.aggregation import weighting as weighting_named
from fedfit.devices import Registry
from fedfit.types import Update
from fedfit.devices.catalogue import tier


def _update(device: int, value: float) -> Update:
    return Update(device, 0, {"w": torch.tensor([value])}, 1, 1, 1, 1, 1, 0.5)


@pytest.mark.parametrize(("folded", "cutoff", "expected"), [
    ([0, 1, 2, 3], 10, 1.0),             # folded at every version
    ([1, 3, 5], 10, 2.0),                # intervals 2, 2, 2
    ([4], 10, 5.0),                      # versions 0..4 waited for the first fold
    ([2, 3, 9], 10, 10 / 3),             # intervals 3, 1, 6
    ([11], 4, 12 / 3),                   # 12 versions recorded as 4, 4, 4
    ([13], 4, 14 / 4),                   # 14 versions as 4, 4, 4, 2
    ([0, 0], 10, 0.5),                   # twice in one version: two intervals over one version
    ([], 10, 1.0),
])
def test_mean_interval_by_hand(folded: list[int], cutoff: int, expected: float) -> None:
    assert mean_interval(folded, cutoff) == pytest.approx(expected)


@pytest.mark.parametrize("folded", [[3, 2], [-1]])
def test_mean_interval_refuses_versions_out_of_order(folded: list[int]) -> None:
    with pytest.raises(ValueError, match="must not descend"):
        mean_interval(folded, 10)


def test_cutoff_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="cutoff"):
        MeanInterval(0)([1])


def test_the_average_weights_each_update_by_its_participation() -> None:
    master = {"w": torch.tensor([0.0])}
    arrivals = [Arrival(_update(0, 1.0), participation=1.0), Arrival(_update(1, 5.0), participation=3.0)]
    rule = AggregationRule(weighting=weighting_named("uniform"))

    assert aggregate(master, arrivals, rule)["w"].item() == pytest.approx((1 * 1.0 + 3 * 5.0) / 4)
    unweighted = [Arrival(a.update) for a in arrivals]
    assert aggregate(master, unweighted, rule)["w"].item() == pytest.approx(3.0)


def test_participation_weights_the_mean_discount_of_the_server_step() -> None:
    # w·ω = 1 and 3, discounts 1 and 1/2: average (1·1·1 + 3·½·5) / (1 + 1.5), η = (1 + 1.5) / 4.
    master = {"w": torch.tensor([0.0])}
    arrivals = [Arrival(_update(0, 1.0), staleness=0, participation=1.0),
                Arrival(_update(1, 5.0), staleness=1, participation=3.0)]
    rule = AggregationRule(weighting=weighting_named("uniform"),
                           staleness=StalenessDiscount("polynomial", exponent=1.0))

    expected = (2.5 / 4) * (1.0 + 7.5) / 2.5
    assert aggregate(master, arrivals, rule)["w"].item() == pytest.approx(expected)


def test_the_registry_keeps_each_fold_in_order() -> None:
    registry = Registry()
    registry.add(7, tier("smartwatch"))

    assert registry.record_fold(7, 0) == (0,)
    assert registry.record_fold(7, 4) == (0, 4)
    assert registry.history(7).folded == (0, 4)
