"""``dynamite.whole_rounds``: the bound's K counts the rounds that finish within the budget, so a
second saved that buys no whole round buys nothing (hand-computed references)."""

from __future__ import annotations

import math

import pytest

from fedfit.policy.dynamite.bound import Budget, Estimates, bound, rounds_within
from fedfit.policy.dynamite.costs import DeviceCost
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.policy.dynamite.search import assign_heterogeneous, search_homogeneous_at

# F0 = 1, η = 0.1, τ = 10: the optimisation term is 1 / K; β η σ² / 2 = 0.1: the noise is 0.1 / b
EST = Estimates(beta=1.0, rho=1.0, delta=0.0, sigma2=2.0, loss=1.0)
# a link-bound device: a round of τ = 10 steps of b costs 1 + 0.01 b seconds
LINK = DeviceCost(sample_s=0.001, half_batch=0.0, comm_s=1.0, compute_power_w=1.0, radio_power_w=1.0,
                  micro_cap=64, data_size=64)


def test_rounds_within_counts_whole_rounds_only_where_asked() -> None:
    assert rounds_within(Budget(time_s=10.0), 3.0, 1.0) == pytest.approx(10 / 3)
    assert rounds_within(Budget(time_s=10.0, whole_rounds=True), 3.0, 1.0) == 3
    assert rounds_within(Budget(energy_j=10.0, whole_rounds=True), 1.0, 4.0) == 2  # joules bind alike
    assert rounds_within(Budget(time_s=10.0, energy_j=30.0, whole_rounds=True), 3.0, 4.0) == 3  # the tighter
    assert rounds_within(Budget(time_s=0.9, whole_rounds=True), 0.3, 1.0) == 3  # 0.9 / 0.3 = 2.999…96 in floats
    assert rounds_within(Budget(time_s=2.0, whole_rounds=True), 4.0, 1.0) == 0.5  # none fits: still the ratio
    assert rounds_within(Budget(whole_rounds=True), 4.0, 1.0) == math.inf


def test_the_bound_charges_the_whole_rounds() -> None:
    # b = 16: rounds of 1.16 s; 10.5 s afford 9.05 of them, 9 whole: Φ = 1/9 + 0.1/16
    assert bound(10, (16,), [LINK], [1.0], EST, 0.1, Budget(time_s=10.5, whole_rounds=True)) == \
        pytest.approx(1 / 9 + 0.1 / 16)
    assert bound(10, (16,), [LINK], [1.0], EST, 0.1, Budget(time_s=10.5)) == pytest.approx(1.16 / 10.5 + 0.1 / 16)


def test_a_batch_grows_to_the_edge_of_its_whole_rounds_instead_of_buying_a_fraction_of_one() -> None:
    """Continuous K: Φ(b) = (1 + 0.01 b) / 10.5 + 0.1 / b, least at b = √105 ≈ 10.2 (grid: 10).
    Whole rounds: b ≤ 5 affords 10 rounds (Φ(5) = 0.12), b ≤ 16 nine (Φ(16) = 0.1174),
    b ≤ 31 eight (Φ(27) = 0.1287): 16."""
    assert search_homogeneous_at(10, [LINK], [1.0], EST, 0.1, Budget(time_s=10.5)) == (10,)
    assert search_homogeneous_at(10, [LINK], [1.0], EST, 0.1, Budget(time_s=10.5, whole_rounds=True)) == (16,)


def test_the_heterogeneous_descent_scores_moves_in_whole_rounds() -> None:
    """Two link-bound devices, equal shares, τ fixed at 1 by τ_max: a round costs 1 + 0.001 b s
    of 10.5 s, Φ = 10 / K + 0.4 · Σ 0.25 / b_i. Continuous K: a common b is least at
    b² = 0.2 · 1050, b ≈ 14.5. Whole rounds: 10 for rounds ≤ 1.05 s (b ≤ 50), so both grow to the
    largest grid batch within them, 45 (Φ = 1.0044; 64 affords 9: Φ = 1.1142)."""
    est = Estimates(beta=1.0, rho=1.0, delta=0.0, sigma2=8.0, loss=1.0)
    devices = [LINK, LINK]
    whole = assign_heterogeneous(devices, [0.5, 0.5], est, 0.1, Budget(time_s=10.5, whole_rounds=True), 1,
                                 energy_cap=False)
    assert whole.batches == (45, 45)
    assert whole.bound == pytest.approx(10 / 10 + 2 * 0.25 * 0.4 / 45)
    cont = assign_heterogeneous(devices, [0.5, 0.5], est, 0.1, Budget(time_s=10.5), 1, energy_cap=False)
    assert max(cont.batches) < 45


def test_the_config_knob_reaches_the_planner_and_the_budget_left() -> None:
    from fedfit.experiment import built
    from tests.policy.dynamite.test_dynamite_end_to_end import small

    assert small().dynamite.whole_rounds is False
    for value in (True, False):
        with built(small(dynamite={"whole_rounds": value})) as exp:
            planner = exp.orchestrator.observer
            assert isinstance(planner, DynamitePlanner)
            assert planner.settings.budget.whole_rounds is value
            assert planner._budget_left(1).whole_rounds is value
