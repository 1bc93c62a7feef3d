"""The drift calibration: the least-squares factor of measured against predicted drift, from
the loss of the model each device received."""

from __future__ import annotations

import math

import pytest
import torch

from fedfit.policy.dynamite import Budget, Estimates, drift
from fedfit.policy.dynamite.calibrate import Calibration, RoundLoss, calibrate, global_decrease, round_loss
from fedfit.policy.dynamite.estimate import RoundObservation
from fedfit.policy.dynamite.search import search_homogeneous
from tests.policy.dynamite.test_bound_search import device

SHARES = {0: 1.0, 1: 3.0}


def synthetic(c_true: float, rounds: int, noise: float, holding: float, prior: float = 1.0,
              low: float = 0.0, high: float = 10.0) -> Calibration:
    """Rounds of τ cycling 5..40 whose global loss falls by progress − c_true · drift (+ a
    deterministic zero-mean ±noise), reported identically by both devices."""
    state, loss = Calibration(prior=prior, low=low, high=high, holding=holding), 3.0
    for k in range(rounds):
        tau = 5 + (7 * k) % 36
        progress, x = 0.002 * tau, 1e-5 * tau * tau
        state = calibrate(state, RoundLoss(k, {0: loss, 1: loss}, SHARES, progress, x))
        loss -= progress - c_true * x + noise * (-1) ** k
    return state


@pytest.mark.parametrize("c_true", [0.0, 0.3, 1.0, 2.5])
def test_a_noiseless_sequence_gives_its_factor_at_once_without_memory(c_true: float) -> None:
    assert synthetic(c_true, rounds=2, noise=0.0, holding=0.0).factor == pytest.approx(c_true)


@pytest.mark.parametrize("c_true", [0.0, 0.3, 1.0, 2.5])
def test_the_prior_fades_and_the_true_factor_remains(c_true: float) -> None:
    assert synthetic(c_true, rounds=200, noise=0.0, holding=0.9).factor == pytest.approx(c_true, abs=1e-6)


def test_loss_noise_averages_out() -> None:
    # noise ±0.003 per round against drift costs of 2.5e-4..1.6e-2: a single round at τ = 5 is
    # far off (y/x = 0.3 + 0.003 / 2.5e-4), the weighted least squares over ~10 rounds is not
    one = synthetic(0.3, rounds=2, noise=-0.003, holding=0.0, high=100.0).factor
    many = synthetic(0.3, rounds=300, noise=0.003, holding=0.9, high=100.0).factor
    assert one == pytest.approx(0.3 + 12.0)
    assert many == pytest.approx(0.3, abs=0.1)


def test_prior_counts_as_one_observation_at_the_first_rounds_drift() -> None:
    c = Calibration(prior=1.0, holding=0.8)
    c = calibrate(c, RoundLoss(4, {0: 2.0}, {0: 1.0}, progress=0.3, drift=0.5))
    assert c.factor == 1.0  # one round: nothing to pair yet
    c = calibrate(c, RoundLoss(5, {0: 1.8}, {0: 1.0}, progress=0.3, drift=0.5))
    # y = 0.3 − 0.2 = 0.1, x = 0.5: (0.8 · 1 + 0.1 / 0.5) / 1.8
    assert c.factor == pytest.approx((0.8 + 0.2) / 1.8)


def test_clamped_to_its_bounds() -> None:
    assert synthetic(-1.0, rounds=2, noise=0.0, holding=0.0).factor == 0.0  # better than planned
    assert synthetic(50.0, rounds=2, noise=0.0, holding=0.0, high=10.0).factor == 10.0
    assert synthetic(0.01, rounds=2, noise=0.0, holding=0.0, low=0.1).factor == 0.1


def test_only_consecutive_versions_with_drift_are_paired() -> None:
    c = Calibration(prior=0.7, holding=0.0)
    c = calibrate(c, RoundLoss(0, {0: 2.0}, {0: 1.0}, progress=0.3, drift=0.5))
    c = calibrate(c, RoundLoss(2, {0: 1.0}, {0: 1.0}, progress=0.3, drift=0.0))  # skipped a version
    assert c.factor == 0.7 and c.last is not None and c.last.version == 2
    c = calibrate(c, RoundLoss(3, {0: 0.5}, {0: 1.0}, progress=0.3, drift=0.5))  # paired with τ = 1: no drift
    assert c.factor == 0.7


def test_the_decrease_is_taken_over_the_devices_in_both_rounds() -> None:
    # device 2 (high loss) joins in the second round: it must not count as a rise of the loss
    before = RoundLoss(0, {0: 2.0, 1: 1.0}, {0: 1.0, 1: 1.0}, 0.0, 0.0)
    after = RoundLoss(1, {0: 1.5, 1: 0.7, 2: 9.0}, {0: 1.0, 1: 1.0, 2: 5.0}, 0.0, 0.0)
    assert global_decrease(before, after) == pytest.approx((0.5 + 0.3) / 2)
    assert global_decrease(before, RoundLoss(1, {5: 1.0}, {5: 1.0}, 0.0, 0.0)) is None


def test_round_loss_plans_progress_and_drift_by_hand() -> None:
    est = Estimates(beta=2.0, rho=0.5, delta=3.0, sigma2=4.0, loss=1.0, zeta=1.0, drift_scale=0.25)
    obs = RoundObservation(start=torch.zeros(1), grads={0: torch.zeros(1), 1: torch.zeros(1)},
                           samples={0: 30, 1: 90}, shares={0: 1.0, 1: 3.0}, loss=1.0, version=7,
                           steps={0: 6, 1: 6}, start_losses={0: 2.0, 1: 1.0})
    r = round_loss(obs, est, lr=0.1)
    noise = 2.0 * 0.1 * 4.0 / 2 * (0.25 ** 2 / 5 + 0.75 ** 2 / 15)  # b_i = 30/6, 90/6
    h = 1.0 / 2.0 * (3.0 / 2.0 * (1.2 ** 6 - 1) - 0.1 * 3.0 * 6)  # ζ/β · Wang's h, c = 1 (not 0.25)
    assert r.version == 7 and dict(r.losses) == {0: 2.0, 1: 1.0}
    assert r.progress == pytest.approx(0.1 * 6 * (0.25 - noise))
    assert r.drift == pytest.approx(0.5 * h)


def test_the_factor_scales_the_drift_term_and_a_free_drift_takes_the_largest_tau() -> None:
    est = Estimates(beta=2.0, rho=1.0, delta=3.0, sigma2=1.0, loss=2.0)
    half = Estimates(beta=2.0, rho=1.0, delta=3.0, sigma2=1.0, loss=2.0, drift_scale=0.5)
    assert drift(7, 0.1, half) == pytest.approx(drift(7, 0.1, est) / 2)
    devices = [device(sample_s=0.01), device(sample_s=0.001)]
    budget = Budget(time_s=100.0)
    worst = search_homogeneous(devices, [0.5, 0.5], est, 0.1, budget, tau_max=40)
    free = search_homogeneous(devices, [0.5, 0.5], Estimates(2.0, 1.0, 3.0, 1.0, 2.0, drift_scale=0.0), 0.1,
                              budget, tau_max=40)
    assert worst.tau < 40 and free.tau == 40
    assert math.isfinite(worst.bound)
