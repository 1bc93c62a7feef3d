"""The heterogeneous assignment's energy cap, on hand-computed cases, and both budgets at once."""

from __future__ import annotations

import math

import pytest

from fedfit.policy.dynamite import Budget, DeviceCost, Estimates, assign_heterogeneous, bound
from fedfit.policy.dynamite.energy_fill import energy_fill, round_energy_j
from fedfit.policy.dynamite.search import search_homogeneous_at

EST = Estimates(beta=1.0, rho=1.0, delta=1.0, sigma2=4.0, loss=1.0, drift_scale=0.0)


def device(sample_s: float, comm_s: float = 0.0, power_w: float = 1.0, cap: int = 1000) -> DeviceCost:
    return DeviceCost(sample_s, 0.0, comm_s, compute_power_w=power_w, radio_power_w=1.0, micro_cap=cap,
                      data_size=1000)


def test_fill_lands_on_the_lagrangian_optimum() -> None:
    # τ = 1, e_i(b) = a_i b: minimise 0.25/b1 + 0.25/b2 subject to 0.01 b1 + 0.04 b2 ≤ 0.48.
    # b_i = p_i / sqrt(λ c_i): b1 / b2 = sqrt(0.04 / 0.01) = 2, and 0.01·2b2 + 0.04·b2 = 0.48
    # gives b2 = 8, b1 = 16 (noise 0.25/16 + 0.25/8 = 0.046875)
    devices, grids = [device(0.01), device(0.04)], [list(range(1, 41))] * 2
    assert energy_fill(1, devices, [0.5, 0.5], grids, limit_s=100.0, cap_j=0.48) == [16, 8]


def test_fill_matches_brute_force_on_grids() -> None:
    devices = [device(0.01, comm_s=1.0), device(0.02, comm_s=2.0, power_w=3.0), device(0.005)]
    shares, tau, cap_j = [0.2, 0.5, 0.3], 3, 8.0
    grids = [[1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]] * 3
    found = energy_fill(tau, devices, shares, grids, limit_s=100.0, cap_j=cap_j)
    feasible = [(sum(p * p / b for p, b in zip(shares, bs)), bs) for bs in
                ((x, y, z) for x in grids[0] for y in grids[1] for z in grids[2])
                if round_energy_j(tau, bs, devices) <= cap_j]
    best = min(feasible)
    assert round_energy_j(tau, found, devices) <= cap_j
    # greedy on a convex separable allocation: optimal up to the last step the cap cannot pay for;
    assert tuple(found) == best[1]  # here the greedy is exact


def test_fill_keeps_every_round_within_the_time_limit() -> None:
    # round_s = τ·a·b: with τ = 2 and a limit of 0.4 s, the cheap device stops at b = 20
    # (2·0.01·20 = 0.4) however many joules are left
    devices, grids = [device(0.01), device(0.04)], [list(range(1, 101))] * 2
    found = energy_fill(2, devices, [0.5, 0.5], grids, limit_s=0.4, cap_j=100.0)
    assert found == [20, 5]  # device 2: 2·0.04·5 = 0.4 s


def test_capped_assignment_spends_no_more_than_the_common_batch() -> None:
    fast, slow = device(0.001, comm_s=2.0), device(0.01, comm_s=2.0)
    args = ([fast, slow], [0.5, 0.5], EST, 0.1, Budget(time_s=200.0))
    capped = assign_heterogeneous(*args, tau_max=10)
    free = assign_heterogeneous(*args, tau_max=10, energy_cap=False)
    common = search_homogeneous_at(capped.tau, *args)
    assert round_energy_j(capped.tau, capped.batches, [fast, slow]) <= round_energy_j(capped.tau, common, [fast, slow])
    assert capped.bound <= bound(capped.tau, common, *args) + 1e-12
    # the uncapped fill buys its lower bound with joules the time budget does not count
    assert free.bound <= capped.bound
    spent = {name: round_energy_j(a.tau, a.batches, [fast, slow]) for name, a in (("free", free), ("capped", capped))}
    assert spent["free"] > spent["capped"]
    # joules go where they are cheap: the fast device's samples cost a tenth
    assert capped.batches[0] > capped.batches[1]


def test_an_energy_budget_prices_the_joules_instead_of_the_cap() -> None:
    devices = [device(0.001, comm_s=1.0), device(0.01, comm_s=1.0)]
    for energy_j in (60.0, 1e6):  # binding, and not
        budget = Budget(time_s=100.0, energy_j=energy_j)
        args = (devices, [0.5, 0.5], EST, 0.1, budget)
        assert assign_heterogeneous(*args, tau_max=10) == assign_heterogeneous(*args, tau_max=10, energy_cap=False)
    # a binding energy budget alone keeps the round's joules down: K = E / Σ round_j
    tight = assign_heterogeneous(devices, [0.5, 0.5], EST, 0.1, Budget(time_s=100.0, energy_j=60.0), tau_max=10)
    loose = assign_heterogeneous(devices, [0.5, 0.5], EST, 0.1, Budget(time_s=100.0, energy_j=1e6), tau_max=10)
    assert round_energy_j(tight.tau, tight.batches, devices) < round_energy_j(loose.tau, loose.batches, devices)


def test_both_budgets_bind_at_the_smaller_round_count() -> None:
    # one device, τ = 2, b = 10: round 2·0.1 + 2 = 2.2 s and 1 W·0.2 s + 1 W·2 s = 2.2 J.
    # T = 100 s pays 45.45 rounds, E = 22 J pays 10: K = 10, as with the energy budget alone
    one = [device(0.01, comm_s=2.0)]
    both = bound(2, [10], one, [1.0], EST, 0.1, Budget(time_s=100.0, energy_j=22.0))
    assert both == pytest.approx(bound(2, [10], one, [1.0], EST, 0.1, Budget(energy_j=22.0)))
    assert both == pytest.approx(1.0 / (0.1 * 10 * 2) + 1.0 * 0.1 * 4.0 / 2 / 10)
    # with E = 1000 J the time budget binds instead
    loose = bound(2, [10], one, [1.0], EST, 0.1, Budget(time_s=100.0, energy_j=1000.0))
    assert loose == pytest.approx(bound(2, [10], one, [1.0], EST, 0.1, Budget(time_s=100.0)))
    assert not math.isclose(both, loose)


def test_config_key_reaches_the_planner_and_bad_values_are_refused() -> None:
    from fedfit.errors import ConfigError
    from fedfit.experiment import built
    from fedfit.policy.dynamite.planner import DynamitePlanner
    from tests.policy.dynamite.test_dynamite_end_to_end import small

    for value in ("homogeneous", "none"):
        with built(small(dynamite={"energy_cap": value})) as exp:
            assert isinstance(exp.orchestrator.observer, DynamitePlanner)
            assert exp.orchestrator.observer.settings.energy_cap == value
    assert small().dynamite.energy_cap == "homogeneous"
    with pytest.raises(ConfigError, match="energy_cap"):
        small(dynamite={"energy_cap": "joules"})
