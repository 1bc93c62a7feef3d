"""DYNAMITE's bound, closed form, exact search and heterogeneous assignment on small hand cases."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from fedfit.policy.dynamite import (
    Budget, DeviceCost, Estimates, assign_heterogeneous, bound, closed_form, closed_form_assignment,
    search_homogeneous,
)
from fedfit.policy.dynamite.bound import RoundShape, drift

EST = Estimates(beta=1.0, rho=1.0, delta=1.0, sigma2=4.0, loss=1.0)


def device(sample_s: float = 0.01, comm_s: float = 2.0, cap: int = 1000, data: int = 1000) -> DeviceCost:
    return DeviceCost(sample_s, 0.0, comm_s, compute_power_w=1.0, radio_power_w=1.0, micro_cap=cap, data_size=data)


def test_bound_by_hand() -> None:
    # one device, τ=2, b=10, T=100 s: round = 2*0.1 + 2 = 2.2 s, K = 100/2.2
    # Φ = 1/(0.1*K*2) + 1*0.1*4/2 * 1/10 + 1 * h(2)/(0.1*2),  h(2) = (1.1^2 - 1) - 0.2 = 0.01
    value = bound(2, [10], [device()], [1.0], EST, 0.1, Budget(time_s=100.0))
    assert value == pytest.approx(2.2 / 20 + 0.02 + 0.05)


def test_energy_budget_counts_every_device() -> None:
    # two devices, round energy = 2 * (1 W * 2 * 0.1 s + 1 W * 2 s) = 4.4 J; K = 44/4.4 = 10
    value = bound(2, [10, 10], [device(), device()], [0.5, 0.5], EST, 0.1, Budget(energy_j=44.0))
    noise = 1 * 0.1 * 4 / 2 * (0.25 / 10 + 0.25 / 10)
    assert value == pytest.approx(1 / (0.1 * 10 * 2) + noise + 0.05)


def test_closed_form_minimises_the_first_order_bound() -> None:
    shape = RoundShape(per_sample=0.01, per_step=0.0, per_round=3.0, budget=500.0)
    lr, shares = 0.05, [0.5, 0.5]
    tau, b = closed_form(shape, shares, EST, lr)

    def first_order(t: float, batch: float) -> float:  # the separable approximation, written out
        k = shape.budget / (t * shape.per_sample * batch + shape.per_round)
        return EST.loss / (lr * k * t) + EST.beta * lr * EST.sigma2 / 2 * 0.5 / batch \
            + EST.rho * EST.delta * lr * EST.beta * (t - 1) / 2

    grid = min(((first_order(t / 10, c / 10), t / 10, c / 10) for t in range(5, 400) for c in range(5, 400)))
    assert tau == pytest.approx(grid[1], abs=0.1) and b == pytest.approx(grid[2], abs=0.1)


def test_search_matches_brute_force() -> None:
    devices, shares, budget = [device(), device(0.02, 1.0)], [0.3, 0.7], Budget(time_s=300.0)
    found = search_homogeneous(devices, shares, EST, 0.1, budget, tau_max=12)
    brute = min((bound(t, [b, b], devices, shares, EST, 0.1, budget), t, b)
                for t in range(1, 13) for b in range(1, 1001))
    assert found.bound <= brute[0] * 1.01  # the grid's resolution costs at most 1%


def test_closed_form_is_close_to_the_search() -> None:
    devices, shares, budget = [device(), device()], [0.5, 0.5], Budget(time_s=300.0)
    exact = search_homogeneous(devices, shares, EST, 0.05, budget, tau_max=30)
    closed = closed_form_assignment(devices, shares, EST, 0.05, budget, tau_max=30)
    assert closed.bound <= exact.bound * 1.05


def test_fast_device_takes_a_larger_batch_in_its_time_share() -> None:
    fast, slow = device(0.001), device(0.01)
    plan = assign_heterogeneous([fast, slow], [0.5, 0.5], EST, 0.1, Budget(time_s=200.0), tau_max=10)
    homogeneous = search_homogeneous([fast, slow], [0.5, 0.5], EST, 0.1, Budget(time_s=200.0), tau_max=10)
    assert plan.batches[0] > plan.batches[1]
    assert plan.bound < homogeneous.bound
    # the fast device's round stays within the slow one's (K unchanged)
    assert fast.round_s(plan.tau, plan.batches[0]) <= slow.round_s(plan.tau, plan.batches[1]) * 1.2


def test_larger_data_gets_the_larger_batch_under_an_energy_budget() -> None:
    small, large = device(data=200), device(data=800)
    plan = assign_heterogeneous([small, large], [0.2, 0.8], EST, 0.1, Budget(energy_j=400.0), tau_max=10)
    assert plan.batches[1] > plan.batches[0]


def test_no_batch_above_what_the_device_affords() -> None:
    devices = [device(0.0001, cap=6), device(0.01, cap=500)]
    plan = assign_heterogeneous(devices, [0.5, 0.5], EST, 0.1, Budget(time_s=500.0), tau_max=10)
    assert plan.batches[0] <= 6 and plan.batches[1] <= 500


def test_unbounded_budget_takes_the_largest_batch_and_one_step() -> None:
    plan = closed_form_assignment([device(cap=64)], [1.0], EST, 0.1, Budget(), tau_max=10)
    assert plan.tau == 1 and plan.batches == (64,)
    assert math.isfinite(plan.bound)


def test_drift_scales_with_the_hessian_dissimilarity() -> None:
    # Wang's h(2) at β=1, δ=1, η=0.1 is (1.1² − 1) − 0.2 = 0.01; ζ = 0.25 keeps a quarter of it,
    # ζ = 0 none (equal Hessians: the average follows the centralised path), and ζ above β is
    # capped at β (both bound the same gap; Wang's is the looser)
    assert drift(2, 0.1, dataclasses.replace(EST, zeta=0.25)) == pytest.approx(0.0025)
    assert drift(2, 0.1, dataclasses.replace(EST, zeta=0.0)) == 0.0
    assert drift(2, 0.1, dataclasses.replace(EST, zeta=3.0)) == pytest.approx(drift(2, 0.1, EST))
    assert drift(2, 0.1, EST) == pytest.approx(0.01)


def test_closed_form_tau_uses_the_dissimilarity() -> None:
    # τ* = sqrt(2 F0 C / (η² B ρ δ ζ)) = sqrt(2 · 1 · 200 / (0.01 · 100 · 1 · 1 · ζ)):
    # 20 at ζ = 1, 40 at ζ = 0.25
    shape = RoundShape(per_sample=0.01, per_step=0.0, per_round=200.0, budget=100.0)
    assert closed_form(shape, [0.5, 0.5], EST, 0.1)[0] == pytest.approx(20.0)
    assert closed_form(shape, [0.5, 0.5], dataclasses.replace(EST, zeta=0.25), 0.1)[0] == pytest.approx(40.0)


def test_equal_hessians_average_to_the_centralised_path() -> None:
    # F_i = β/2 ‖w − c_i‖²: τ steps of local gradient descent, averaged by data share, land
    # exactly where τ steps on F = Σ p_i F_i do, which is why ζ = 0 means no drift at any τ
    beta, lr, tau, shares = 2.0, 0.1, 30, [0.6, 0.4]
    centres, w = [torch.tensor([1.0, -2.0]), torch.tensor([-3.0, 5.0])], torch.tensor([4.0, 4.0])
    local = []
    for c in centres:
        wi = w.clone()
        for _ in range(tau):
            wi = wi - lr * beta * (wi - c)
        local.append(wi)
    c_bar, v = sum(p * c for p, c in zip(shares, centres)), w.clone()
    for _ in range(tau):
        v = v - lr * beta * (v - c_bar)
    assert torch.allclose(sum(p * wi for p, wi in zip(shares, local)), v, atol=1e-5)
    assert drift(tau, lr, Estimates(beta=beta, rho=1.0, delta=3.0, sigma2=0.0, loss=1.0, zeta=0.0)) == 0.0
