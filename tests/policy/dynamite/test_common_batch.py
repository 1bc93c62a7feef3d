"""The heterogeneous solver's common batch when one device's memory holds a single sample."""

from __future__ import annotations

import math

import pytest

from fedfit.policy.dynamite.bound import Budget, Estimates
from fedfit.policy.dynamite.costs import DeviceCost
from fedfit.policy.dynamite.energy_fill import round_energy_j
from fedfit.policy.dynamite.search import assign_heterogeneous, search_homogeneous_at

# Two devices alike but for memory: a = 0.01 s a sample, no fixed step cost, a 1 s link, 1 W.
ROOMY = DeviceCost(0.01, 0.0, 1.0, 1.0, 1.0, micro_cap=64, data_size=64)
TIGHT = DeviceCost(0.01, 0.0, 1.0, 1.0, 1.0, micro_cap=1, data_size=64)
# βησ²/2 = 1 · 0.1 · 4 / 2 = 0.2; δ = 0: no drift; F0 = 1.
EST = Estimates(beta=1.0, rho=1.0, delta=0.0, sigma2=4.0, loss=1.0)
BUDGET = Budget(time_s=10.0)


def test_a_one_sample_device_does_not_pin_the_common_batch() -> None:
    # τ = 10, shares ½ ½, iid noise p²/b: Φ(b) = max(0.1 b + 1, 1.1) / 10 + 0.2 (¼/b + ¼/1)
    # b = 1: 0.11 + 0.1 = 0.21; b = 2: 0.12 + 0.075 = 0.195; b = 3: 0.13 + 0.0667 = 0.1967
    assert search_homogeneous_at(10, [ROOMY, TIGHT], [0.5, 0.5], EST, 0.1, BUDGET) == (2, 1)


def test_the_energy_cap_is_that_batch_s_joules() -> None:
    # at (2, 1): 10 steps · 0.01 s · (2 + 1) samples · 1 W + 2 links · 1 s · 1 W = 2.3 J
    assert round_energy_j(10, (2, 1), [ROOMY, TIGHT]) == pytest.approx(2.3)
    found = assign_heterogeneous([ROOMY, TIGHT], [0.5, 0.5], EST, 0.1, BUDGET, tau_max=10)
    assert found.batches[1] == 1 and found.batches[0] >= 2
    assert round_energy_j(found.tau, found.batches, [ROOMY, TIGHT]) <= round_energy_j(
        found.tau, search_homogeneous_at(found.tau, [ROOMY, TIGHT], [0.5, 0.5], EST, 0.1, BUDGET),
        [ROOMY, TIGHT]) * (1 + 1e-9)
    assert math.isfinite(found.bound)
