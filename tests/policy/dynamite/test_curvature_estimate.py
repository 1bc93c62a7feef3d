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


def test_the_planner_prices_the_latest_rounds_probe() -> None:
    import dataclasses

    from fedfit.policy.dynamite.curvature import contraction
    from fedfit.types import TaskCost, TaskResult, TrainPlan, Update
    from tests.policy.dynamite.test_reachable import fleet_planner

    def results(version: int, c: float) -> list[TaskResult]:
        cost = TaskCost(0.5, 1.0, 0.5, 3.0, 0, 0, 0, 0.0)
        return [TaskResult(TrainPlan(d, version, micro_batch=4, lr=0.1), "test", 0.0, 2.0, Update(
            d, version, {"w": torch.full((3,), 0.1 * (d + 1) + version)}, 100, 40, 10, 4, 1, 1.0,
            sigma2=1.0, noise_curvature=c), cost, 0) for d in (0, 1)]

    for latest, expected in ((True, 6.0), (False, 0.5 * 2.0 + 0.5 * 6.0)):
        p = fleet_planner(offline=set())
        p.settings = dataclasses.replace(p.settings, sigma_probe=True, noise_model="curvature",
                                         curvature_latest=latest, holding=0.5)
        p.observe(1, {"w": torch.zeros(3)}, results(0, 2.0), 1.0)
        p.observe(2, {"w": torch.ones(3)}, results(1, 6.0), 2.0)
        assert p.estimator.noise_curvature == pytest.approx(expected)
        assert p._device(0, 40).contraction == pytest.approx(contraction(p.lr, expected))


def test_sigma_latest_takes_the_latest_rounds_probed_sigma2() -> None:
    def obs(sigma2s: dict[int, float]) -> RoundObservation:
        return RoundObservation(start=torch.zeros(2), grads={1: torch.ones(2), 2: torch.ones(2)},
                                samples={1: 10, 2: 10}, shares={1: 100.0, 2: 300.0}, loss=1.0, sigma2s=sigma2s)

    # round 1: (100·2 + 300·6)/400 = 5; round 2: (100·10 + 300·2)/400 = 4 (the same start: no β, σ² is the probes')
    latest = observe(observe(EstimatorState(), obs({1: 2.0, 2: 6.0}), 0.5, sigma_holding=0.0),
                     obs({1: 10.0, 2: 2.0}), 0.5, sigma_holding=0.0)
    smoothed = observe(observe(EstimatorState(), obs({1: 2.0, 2: 6.0}), 0.5), obs({1: 10.0, 2: 2.0}), 0.5)
    assert latest.sigma2 == pytest.approx(4.0) and smoothed.sigma2 == pytest.approx(4.5)


def test_sigma_estimate_key_reaches_the_planner_and_bad_values_are_refused() -> None:
    from fedfit.errors import ConfigError
    from fedfit.experiment import built
    from tests.policy.dynamite.test_dynamite_end_to_end import small

    with built(small(dynamite={"sigma_estimate": "latest"})) as exp:
        planner = exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner) and planner.settings.sigma_latest
        assert not planner.settings.curvature_latest
    with pytest.raises((ConfigError, ValueError), match="sigma_estimate"):
        small(dynamite={"sigma_estimate": 1})
