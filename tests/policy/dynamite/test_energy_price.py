"""``dynamite.energy_price: plan_power``: a time-only budget charges a round √(s · j / P₀), P₀ the
free-joules common optimum's power, checked against hand-computed rounds and a brute-force search."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from fedfit.config.dynamite import DynamiteConfig
from fedfit.policy.dynamite import Budget, DeviceCost, Estimates, search_homogeneous
from fedfit.policy.dynamite.bound import bound, rounds_within
from fedfit.policy.dynamite.descent import _rounds_within
from fedfit.policy.dynamite.energy_price import priced_budget
from fedfit.policy.dynamite.search import assign_heterogeneous, batch_grid

# A link-bound pair: device 0's transfer (2 s) sets the round, a sample costs 1 ms and 5 mJ.
LINK = DeviceCost(0.001, 0.0, 2.0, compute_power_w=5.0, radio_power_w=1.0, micro_cap=64, data_size=64)
NEAR = DeviceCost(0.001, 0.0, 0.1, compute_power_w=5.0, radio_power_w=1.0, micro_cap=64, data_size=64)
DEVICES, SHARES = [LINK, NEAR], [0.5, 0.5]
EST = Estimates(beta=1.0, rho=1.0, delta=0.0, sigma2=16.0, loss=1.0)  # δ = 0: no drift term
TIME = Budget(time_s=100.0)


def seconds(b: int) -> float:
    return 0.001 * b + 2.0  # τ = 1: one step of b on device 0, then its 2 s link


def joules(b: int) -> float:
    return 2 * 5.0 * 0.001 * b + 1.0 * (2.0 + 0.1)  # both devices' compute, then both radios


def test_a_round_is_charged_the_geometric_mean_of_its_seconds_and_joules() -> None:
    # 1 s and 8 J at 2 W: √(1 · 8 / 2) = 2 s a round, 5 rounds in 10 s
    assert rounds_within(Budget(time_s=10.0, power_w=2.0), 1.0, 8.0) == 5.0
    assert rounds_within(Budget(time_s=10.0, power_w=8.0), 1.0, 8.0) == 10.0  # at the plan's own rate: K_T
    # an energy budget prices the joules already: the rate is not applied on top of it
    assert rounds_within(Budget(time_s=10.0, energy_j=80.0, power_w=2.0), 1.0, 8.0) == 10.0
    # the descent's array version agrees element by element
    s, j = np.array([1.0, 2.0, 0.5]), np.array([8.0, 3.0, 7.0])
    priced = Budget(time_s=10.0, power_w=2.0)
    assert _rounds_within(priced, s, j).tolist() == [rounds_within(priced, a, b) for a, b in zip(s, j)]


def test_power_is_the_free_joules_optimums() -> None:
    # with joules free, Φ(b) = F0 s(b)/(η T) + β η σ²/2 · 0.5/b falls until b* = √(250 σ²) = 63:
    # the grid's 64, whose round is 2.064 s and 2.74 J
    free = search_homogeneous(DEVICES, SHARES, EST, 0.1, TIME, tau_max=1)
    assert free.batches == (64, 64)
    priced = priced_budget("plan_power", TIME, DEVICES, SHARES, EST, 0.1, tau_max=1)
    assert priced.power_w == pytest.approx(joules(64) / seconds(64))
    assert priced_budget("none", TIME, DEVICES, SHARES, EST, 0.1, 1) == TIME
    assert priced_budget("plan_power", Budget(energy_j=50.0), DEVICES, SHARES, EST, 0.1, 1) == Budget(energy_j=50.0)


def test_priced_search_trades_joules_for_noise_by_hand() -> None:
    priced = priced_budget("plan_power", TIME, DEVICES, SHARES, EST, 0.1, tau_max=1)
    power = joules(64) / seconds(64)

    def phi(b: int) -> float:  # F0 / (η K) + β η σ²/2 · Σ p²/b, K = T / √(s j / P₀)
        k = 100.0 / math.sqrt(seconds(b) * joules(b) / power)
        return 1.0 / (0.1 * k) + 1.0 * 0.1 * 16.0 / 2 * (0.25 / b + 0.25 / b)

    best = min(batch_grid(64), key=phi)
    found = search_homogeneous(DEVICES, SHARES, EST, 0.1, priced, tau_max=1)
    assert found.batches == (best, best) and best < 64  # the joules a free link hid now cost rounds
    assert found.bound == pytest.approx(phi(best))
    assert bound(1, [64, 64], DEVICES, SHARES, EST, 0.1, priced) == pytest.approx(bound(1, [64, 64], DEVICES, SHARES, EST, 0.1, TIME))


def test_heterogeneous_descent_prices_the_off_path_device() -> None:
    # joules free: device 1 (off the critical path) grows to its whole data; priced, it stops lower
    free = assign_heterogeneous(DEVICES, SHARES, EST, 0.1, TIME, tau_max=1, energy_cap=False)
    priced = priced_budget("plan_power", TIME, DEVICES, SHARES, EST, 0.1, tau_max=1)
    found = assign_heterogeneous(DEVICES, SHARES, EST, 0.1, priced, tau_max=1, energy_cap=False)
    assert free.batches[1] == 64 and found.batches[1] < 64


def test_setting_is_validated() -> None:
    assert DynamiteConfig(energy_price="plan_power").energy_price == "plan_power"
    with pytest.raises(ValidationError):
        DynamiteConfig(energy_price="joules")
