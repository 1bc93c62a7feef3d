"""q-FFL's loss-powered weights (Li et al. 2020) plugged into the one average, by hand."""

import math

import pytest
import torch

from fedfit.aggregation import WEIGHTINGS, AggregationRule, Arrival, LossWeighted, aggregate
from fedfit.config import ExperimentConfig
from fedfit.orchestrator_wiring import aggregation_rule
from fedfit.types import Update


def _update(value: float, *, samples: int, loss: float) -> Update:
    return Update(0, 0, {"w": torch.tensor([value])}, samples, samples, 1, 8, 1, loss)


def test_loss_weighted_average_by_hand() -> None:
    # Samples 10 and 30, losses 2.0 and 0.5, q = 2: weights 10·4 = 40 and 30·0.25 = 7.5.
    # Average of 1 and 4: (40·1 + 7.5·4) / 47.5 = 70 / 47.5.
    rule = AggregationRule(weighting=LossWeighted(WEIGHTINGS["samples"], 2.0))
    arrivals = [Arrival(_update(1.0, samples=10, loss=2.0)), Arrival(_update(4.0, samples=30, loss=0.5))]

    out = aggregate({"w": torch.tensor([0.0])}, arrivals, rule)

    assert out["w"].item() == pytest.approx(70 / 47.5)


def test_q_zero_is_the_base_weighting_and_bad_losses_count_as_one() -> None:
    plain = LossWeighted(WEIGHTINGS["samples"], 0.0)
    squared = LossWeighted(WEIGHTINGS["samples"], 2.0)

    assert plain(_update(0.0, samples=12, loss=3.0)) == 12.0
    assert squared(_update(0.0, samples=12, loss=math.nan)) == 12.0
    assert squared(_update(0.0, samples=12, loss=0.0)) == 12.0


def test_config_turns_it_on_only_when_q_is_positive() -> None:
    off = aggregation_rule(ExperimentConfig())
    on = aggregation_rule(ExperimentConfig.model_validate({"aggregation": {"fairness_q": 1.0}}))

    assert not isinstance(off.weighting, LossWeighted)
    assert on.weighting(_update(0.0, samples=10, loss=1.5)) == pytest.approx(15.0)
