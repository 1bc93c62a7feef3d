"""``dynamite.last_round``: in the last round the budget left can buy, K counts whole rounds (a
second saved there buys nothing); the ratio elsewhere (hand-computed references)."""

from __future__ import annotations

import dataclasses

import pytest

from fedfit.errors import ConfigError
from fedfit.policy.dynamite.bound import Budget, Estimates, bound
from fedfit.policy.dynamite.costs import DeviceCost
from fedfit.policy.dynamite.last_round import is_last_round, last_round_budget, shortest_round
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.policy.dynamite.search import search_homogeneous_at

# F0 = 1, η = 0.1, τ = 10: the optimisation term is 1 / K; β η σ² / 2 = 0.1: the noise is 0.1 / b
EST = Estimates(beta=1.0, rho=1.0, delta=0.0, sigma2=2.0, loss=1.0)
# a link-bound device: a round of τ steps of b costs 1 + 0.001 τ b seconds and 1 + 0.001 τ b joules
LINK = DeviceCost(sample_s=0.001, half_batch=0.0, comm_s=1.0, compute_power_w=1.0, radio_power_w=1.0,
                  micro_cap=64, data_size=64)
# a compute-bound one: a step of b costs 0.01 (b + 4) s at 2 W, transfers 0.2 s at 0.5 W
FAST = DeviceCost(sample_s=0.01, half_batch=4.0, comm_s=0.2, compute_power_w=2.0, radio_power_w=0.5,
                  micro_cap=64, data_size=64)


def test_the_shortest_round_is_the_slowest_devices_time_and_the_fleets_joules_at_one_step_of_one() -> None:
    seconds, joules = shortest_round([LINK, FAST])
    assert seconds == pytest.approx(max(1.0 + 0.001, 0.2 + 0.05))
    assert joules == pytest.approx((0.001 + 1.0) + (2.0 * 0.05 + 0.5 * 0.2))


@pytest.mark.parametrize("budget, last", [
    (Budget(time_s=2.5), False),      # two rounds of 1.001 s fit
    (Budget(time_s=2.0), True),       # 1.998 s… only one
    (Budget(time_s=0.5), True),       # none: the last (and the ratio orders the plans)
    (Budget(energy_j=1.5), True),     # joules bind alike: 1.5 / 1.001 J
    (Budget(energy_j=3.0), False),
    (Budget(time_s=10.0, energy_j=1.5), True),  # the tighter
    (Budget(), False),                # no budget: no last round
])
def test_the_last_round_is_when_two_of_the_shortest_rounds_no_longer_fit(budget: Budget, last: bool) -> None:
    assert is_last_round(budget, [LINK]) is last
    assert last_round_budget(budget, [LINK]).whole_rounds is last
    assert last_round_budget(budget, [LINK]).time_s == budget.time_s


def test_in_the_last_round_the_batch_is_chosen_by_its_noise_not_by_a_fraction_of_a_round() -> None:
    """τ = 10 on LINK with 1.5 s left. Ratio: Φ(b) = (1 + 0.01 b) / 1.5 + 0.1 / b, least at
    b = √15 ≈ 3.9 (grid: Φ(3) = 0.7200, Φ(4) = 0.7183, Φ(5) = 0.7200): 4. Last round: K = 1 for
    every b whose round fits 1.5 s (b ≤ 50), Φ = 1 + 0.1 / b: the largest grid batch within, 45."""
    ratio = Budget(time_s=1.5)
    assert search_homogeneous_at(10, [LINK], [1.0], EST, 0.1, ratio) == (4,)
    last = last_round_budget(ratio, [LINK])
    assert search_homogeneous_at(10, [LINK], [1.0], EST, 0.1, last) == (45,)
    assert bound(10, (45,), [LINK], [1.0], EST, 0.1, last) == pytest.approx(1 + 0.1 / 45)
    # b = 54: a round of 1.54 s fits no whole one, K stays the ratio 1.5 / 1.54
    assert bound(10, (54,), [LINK], [1.0], EST, 0.1, last) == pytest.approx(1.54 / 1.5 + 0.1 / 54)


def test_before_the_last_round_the_ratio_stays() -> None:
    """10.5 s left: ten of the shortest rounds fit, so K stays T / round (Φ least at b = √105 → 10,
    where whole rounds in every round would grow it to 16: test_whole_rounds)."""
    budget = last_round_budget(Budget(time_s=10.5), [LINK])
    assert budget.whole_rounds is False
    assert search_homogeneous_at(10, [LINK], [1.0], EST, 0.1, budget) == (10,)


def test_the_config_knob_reaches_the_planner_which_plans_the_last_round_in_whole_rounds() -> None:
    from fedfit.experiment import built
    from tests.policy.dynamite.test_dynamite_end_to_end import small

    assert small().dynamite.last_round is False
    with built(small(dynamite={"last_round": True})) as exp:
        planner = exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner)
        assert planner.settings.last_round is True
        ids = planner.registry.ids()
        seconds, _ = shortest_round([planner._device(d, 40) for d in ids])
        whole = dataclasses.replace(planner.settings, budget=dataclasses.replace(planner.settings.budget,
                                                                                 whole_rounds=True))
        off = dataclasses.replace(planner.settings, last_round=False)
        for left, same_as in ((1.5 * seconds, whole), (10 * seconds, off)):
            planner.spent_s = 60.0 - left  # small()'s budget is 60 s
            on = planner.solve()
            planner.settings = same_as
            assert planner.solve() == on
            planner.settings = dataclasses.replace(planner.settings, last_round=True,
                                                   budget=dataclasses.replace(planner.settings.budget,
                                                                              whole_rounds=False))


def test_a_bad_value_is_a_one_line_config_error() -> None:
    from tests.policy.dynamite.test_dynamite_end_to_end import small

    with pytest.raises((ConfigError, ValueError), match="last_round"):
        small(dynamite={"last_round": "sometimes"})
