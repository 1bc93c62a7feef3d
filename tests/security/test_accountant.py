"""The DP accountant's wiring against published values and closed forms.

Dong, Roth and Su 2020 ("Gaussian Differential Privacy", Harvard Data Science Review, Fig. 4)
report DP-SGD on MNIST (q = 256/60000) at δ = 1e-5: σ = 1.3 for 20 epochs is (1.34, δ)-DP and
σ = 0.7 for 70 epochs (8.68, δ)-DP by Abadi et al.'s moments accountant. The Rényi accountant
with today's RDP→DP conversion is tighter, so it must land below those figures but near them.
Without sampling, one Gaussian mechanism has the exact privacy curve of Balle and Wang 2018
(Thm. 8), δ(ε) = Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ), which the PLD accountant must match.
"""

from __future__ import annotations

import math

import pytest

from fedfit.security.accountant import epsilon, noise_for_epsilon

Q = 256 / 60000


@pytest.mark.parametrize(("sigma", "epochs", "published"), [(1.3, 20, 1.34), (0.7, 70, 8.68)])
def test_rdp_epsilon_is_just_below_the_published_moments_accountant(sigma: float, epochs: int,
                                                                    published: float) -> None:
    eps = epsilon(noise_multiplier=sigma, sampling_rate=Q, rounds=epochs * 60000 // 256, delta=1e-5)
    assert 0.75 * published < eps < published


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def _gaussian_delta(eps: float, sigma: float) -> float:
    return _phi(1 / (2 * sigma) - eps * sigma) - math.exp(eps) * _phi(-1 / (2 * sigma) - eps * sigma)


def test_pld_epsilon_of_one_gaussian_matches_the_analytic_curve() -> None:
    eps = epsilon(noise_multiplier=2.0, sampling_rate=1.0, rounds=1, delta=1e-5, kind="pld")
    assert _gaussian_delta(eps, 2.0) == pytest.approx(1e-5, rel=0.05)


def test_epsilon_grows_with_rounds_and_falls_with_noise() -> None:
    base = epsilon(noise_multiplier=1.0, sampling_rate=0.1, rounds=50, delta=1e-5)
    assert epsilon(noise_multiplier=1.0, sampling_rate=0.1, rounds=100, delta=1e-5) > base
    assert epsilon(noise_multiplier=2.0, sampling_rate=0.1, rounds=50, delta=1e-5) < base
    assert epsilon(noise_multiplier=1.0, sampling_rate=0.1, rounds=0, delta=1e-5) == 0.0


def test_calibrated_noise_spends_the_target_epsilon() -> None:
    sigma = noise_for_epsilon(target_epsilon=4.0, sampling_rate=0.2, rounds=30, delta=1e-3)
    assert epsilon(noise_multiplier=sigma, sampling_rate=0.2, rounds=30, delta=1e-3) == pytest.approx(4.0, abs=0.01)
