"""σ² from the devices' probes: pooled by data share, from the first round, smoothed, instead of
the pseudo-gradient change; the config knob asks the tasks for it."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from fedfit.policy.dynamite.estimate import EstimatorState, RoundObservation, observe, probed_sigma2
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.types import TaskCost, TaskResult, TrainPlan, Update
from tests.helpers import profile, state


def round_obs(start: list[float], grads: dict[int, list[float]], probes: dict[int, float]) -> RoundObservation:
    return RoundObservation(start=torch.tensor(start), grads={i: torch.tensor(g) for i, g in grads.items()},
                            samples={i: 10 for i in grads}, shares={1: 100.0, 2: 300.0}, loss=1.0,
                            steps={i: 5 for i in grads}, batches={i: 4 for i in grads}, sigma2s=probes)


def test_the_round_sigma2_is_the_share_weighted_mean_of_the_probes() -> None:
    obs = round_obs([0.0, 0.0], {1: [1.0, 0.0], 2: [0.0, 1.0]}, {1: 8.0, 2: 4.0})
    assert probed_sigma2(obs) == pytest.approx((100 * 8 + 300 * 4) / 400)  # 5.0
    assert probed_sigma2(dataclasses.replace(obs, sigma2s={2: 4.0})) == 4.0
    assert probed_sigma2(dataclasses.replace(obs, sigma2s={})) is None


def test_probes_give_sigma2_from_the_first_round_and_replace_the_gradient_change_estimate() -> None:
    first = round_obs([0.0, 0.0], {1: [1.0, 0.0], 2: [0.0, 1.0]}, {1: 8.0, 2: 4.0})
    state = observe(EstimatorState(), first, holding=0.5)
    assert state.sigma2 == pytest.approx(5.0)  # no pair of rounds needed
    second = round_obs([1.0, 0.0], {1: [3.0, 0.0], 2: [0.0, -2.0]}, {1: 2.0, 2: 2.0})
    paired = observe(state, second, holding=0.5)
    assert paired.sigma2 == pytest.approx(0.5 * 5.0 + 0.5 * 2.0)  # smoothed probes, not the residual
    unprobed = observe(observe(EstimatorState(), dataclasses.replace(first, sigma2s={}), 0.5),
                       dataclasses.replace(second, sigma2s={}), 0.5)
    assert unprobed.sigma2 is not None and unprobed.sigma2 != pytest.approx(paired.sigma2)


def test_the_planner_reads_the_probes_of_comparable_updates() -> None:
    from tests.policy.dynamite.test_reachable import fleet_planner

    p = fleet_planner(offline=set())
    p.settings = dataclasses.replace(p.settings, sigma_probe=True)
    plan = p.plan(0, 0, profile(), state())
    assert plan.sigma_probe
    cost = TaskCost(0.5, 1.0, 0.5, 3.0, 0, 0, 0, 0.0)
    results = [TaskResult(TrainPlan(d, 0, micro_batch=4, lr=0.1), "test", 0.0, 2.0, Update(
        d, 0, {"w": torch.full((3,), 0.1 * (d + 1))}, size, 40, 10, 4, 1, 1.0, sigma2=s), cost, 0)
        for d, size, s in ((0, 100, 3.0), (1, 300, 7.0))]
    p.observe(1, {"w": torch.zeros(3)}, results, 1.0)
    assert p.estimator.sigma2 == pytest.approx((100 * 3.0 + 300 * 7.0) / 400)


def test_config_knob_reaches_the_planner_and_its_plans() -> None:
    from fedfit.experiment import built
    from tests.policy.dynamite.test_dynamite_end_to_end import small

    assert small().dynamite.sigma_probe is True
    for value in (True, False):
        with built(small(dynamite={"sigma_probe": value})) as exp:
            planner = exp.orchestrator.observer
            assert isinstance(planner, DynamitePlanner)
            assert planner.settings.sigma_probe is value


def test_local_dp_tasks_ask_for_no_probe_so_none_is_charged() -> None:
    """DP-SGD steps take no probe (the trainer skips it), so the planner must not ask for one: the
    cost model would charge every task an extra batch that never runs."""
    from fedfit.experiment import built
    from tests.policy.dynamite.test_dynamite_end_to_end import small

    config = small(privacy={"local": {"enabled": True, "noise_multiplier": 0.5}})
    with built(config) as exp:
        planner = exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner)
        assert planner.settings.sigma_probe is False
        plans = [r.plan for outcome in exp.orchestrator.rounds(exp.initial_params) for r in outcome.results]
        assert plans and not any(plan.sigma_probe for plan in plans)

