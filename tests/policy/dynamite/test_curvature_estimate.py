"""``dynamite.curvature_estimate``: β_σ smoothed over rounds or the latest round's probes alone."""

from __future__ import annotations

import pytest
import torch

from fedfit.policy.dynamite.estimate import EstimatorState, RoundObservation, observe
from fedfit.policy.dynamite.planner import DynamitePlanner


def _obs(curvatures: dict[int, float]) -> RoundObservation:
    return RoundObservation(start=torch.zeros(2), grads={1: torch.ones(2), 2: torch.ones(2)},
                            samples={1: 10, 2: 10}, shares={1: 100.0, 2: 300.0}, loss=1.0,
                            curvatures=curvatures)


def test_latest_takes_each_rounds_pooled_probe_and_leaves_the_other_estimates_smoothed() -> None:
    # round 1: (100·8 + 300·4)/400 = 5; round 2: (100·2 + 300·10)/400 = 8.
    first = observe(EstimatorState(), _obs({1: 8.0, 2: 4.0}), holding=0.5, curvature_holding=0.0)
    second = observe(first, _obs({1: 2.0, 2: 10.0}), holding=0.5, curvature_holding=0.0)
    assert first.noise_curvature == pytest.approx(5.0) and second.noise_curvature == pytest.approx(8.0)
    smoothed = observe(observe(EstimatorState(), _obs({1: 8.0, 2: 4.0}), 0.5), _obs({1: 2.0, 2: 10.0}), 0.5)
    assert smoothed.noise_curvature == pytest.approx(0.5 * 5.0 + 0.5 * 8.0)
    # the other estimates do not depend on how β_σ is read
    assert (second.delta, second.rho, second.loss) == (smoothed.delta, smoothed.rho, smoothed.loss)
    # a round without probes keeps the last one
    third = observe(second, _obs({}), holding=0.5, curvature_holding=0.0)
    assert third.noise_curvature == pytest.approx(8.0)


def test_a_holding_of_its_own_is_the_moving_average_with_that_factor() -> None:
    first = observe(EstimatorState(), _obs({1: 4.0, 2: 4.0}), holding=0.5, curvature_holding=0.75)
    second = observe(first, _obs({1: 8.0, 2: 8.0}), holding=0.5, curvature_holding=0.75)
    assert second.noise_curvature == pytest.approx(0.75 * 4.0 + 0.25 * 8.0)


def test_config_key_reaches_the_planner_and_bad_values_are_refused() -> None:
    from fedfit.errors import ConfigError
    from fedfit.experiment import built
    from tests.policy.dynamite.test_dynamite_end_to_end import small

    for value, latest in (("smoothed", False), ("latest", True)):
        with built(small(dynamite={"curvature_estimate": value})) as exp:
            planner = exp.orchestrator.observer
            assert isinstance(planner, DynamitePlanner)
            assert planner.settings.curvature_latest is latest
    with pytest.raises((ConfigError, ValueError), match="curvature_estimate"):
        small(dynamite={"curvature_estimate": "newest"})
