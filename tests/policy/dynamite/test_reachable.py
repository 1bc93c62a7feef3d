"""DYNAMITE plans for the devices expected to train: reachable at their last report."""

from __future__ import annotations

import pytest
import torch

from fedfit.cost import MemoryModel, ModelCost
from fedfit.devices.registry import Registry
from fedfit.policy import FixedPlanner
from fedfit.policy.dynamite import Budget
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.policy.dynamite.settings import DynamiteSettings
from fedfit.policy.dynamite.reachable import cohort_share, expected_to_train, widen
from fedfit.policy.dynamite.search import assign_heterogeneous, search_homogeneous
from fedfit.types import Link
from tests.helpers import profile, state

COST = ModelCost(num_params=3, param_bytes=12, train_flops_per_sample=3e6, forward_flops_per_sample=1e6,
                 activation_bytes_per_sample=1e4, activation_fixed_bytes=0.0)
SIZES = [100, 300, 600]
LR = 0.1


def test_reachable_devices_are_the_online_ones_with_a_link_or_never_reported() -> None:
    up, down, no_link = state(), state(online=False, link=Link.OFFLINE, bandwidth_bps=0.0), state(bandwidth_bps=0.0)
    assert expected_to_train([up, down, None, no_link, up]) == [0, 2, 4]
    assert expected_to_train([down, down]) == [0, 1]  # none known reachable: plan for all


def test_widen_puts_the_solved_batches_back_in_fleet_order() -> None:
    assert widen([0, 2], [7, 9], 3, [1, 2, 3]) == (7, 2, 9)
    assert widen([], [], 2, [4, 5]) == (4, 5)


def test_cohort_share_is_the_cohort_over_the_planned_devices() -> None:
    # 4 of 10 devices drawn each round, 5 reachable: 4/5 of the planned devices train
    assert cohort_share(0.4, 10, 5) == pytest.approx(0.8)
    assert cohort_share(0.4, 10, 2) == 1.0


def fleet_planner(offline: set[int], plan_for: str = "reachable") -> DynamitePlanner:
    registry = Registry()
    for d in range(3):
        registry.add(d, profile(flops_per_s=1e9 * (1 + 4 * d)))
        down = dict(online=False, link=Link.OFFLINE, bandwidth_bps=0.0) if d in offline else {}
        registry.report_state(d, state(**down), 0.0)  # type: ignore[arg-type]
    s = DynamiteSettings(budget=Budget(time_s=200.0), tau_max=20, plan_for=plan_for)  # type: ignore[arg-type]
    return DynamitePlanner(FixedPlanner(batch_size=32, lr=LR), s, registry=registry, costs=lambda w: COST,
                           memory=MemoryModel(), data_sizes=lambda now_s: SIZES, lr=LR,
                           initial_params={"w": torch.zeros(3)})


def test_an_unreachable_device_is_left_out_of_the_bound_and_gets_the_common_batch() -> None:
    p = fleet_planner(offline={2})
    live = [p._device(d, SIZES[d]) for d in (0, 1)]
    shares = [0.25, 0.75]  # 100 and 300 of the 400 samples the reachable devices hold
    est, budget = p.estimates(), Budget(time_s=200.0)
    common = search_homogeneous(live, shares, est, LR, budget, 20)
    expected = assign_heterogeneous(live, shares, est, LR, budget, 20, start=common)
    got = p.current()
    assert (got.tau, got.batches[:2], got.bound) == (expected.tau, expected.batches, expected.bound)
    assert got.batches[2] == min(common.batches[0], p._device(2, SIZES[2]).batch_cap)
    # planning for the whole fleet (the unreachable device's data share and rounds included) differs
    everyone = [p._device(d, SIZES[d]) for d in range(3)]
    whole = assign_heterogeneous(everyone, [0.1, 0.3, 0.6], est, LR, budget, 20)
    assert whole.batches[:2] != expected.batches or whole.bound != expected.bound


@pytest.mark.parametrize(("offline", "plan_for"), [(set(), "reachable"), ({2}, "fleet")])
def test_the_whole_fleet_is_planned_for_when_all_are_reachable_or_plan_for_fleet(offline: set[int],
                                                                                 plan_for: str) -> None:
    p = fleet_planner(offline=offline, plan_for=plan_for)
    everyone = [p._device(d, SIZES[d]) for d in range(3)]
    est, budget = p.estimates(), Budget(time_s=200.0)
    expected = assign_heterogeneous(everyone, [0.1, 0.3, 0.6], est, LR, budget, 20)
    assert p.current() == expected


def test_config_key_reaches_the_planner_and_bad_values_are_refused() -> None:
    from fedfit.errors import ConfigError
    from fedfit.experiment import built
    from tests.policy.dynamite.test_dynamite_end_to_end import small

    for value in ("reachable", "fleet"):
        with built(small(dynamite={"plan_for": value})) as exp:
            assert isinstance(exp.orchestrator.observer, DynamitePlanner)
            assert exp.orchestrator.observer.settings.plan_for == value
    assert small().dynamite.plan_for == "reachable"
    with pytest.raises(ConfigError, match="plan_for"):
        small(dynamite={"plan_for": "online"})
