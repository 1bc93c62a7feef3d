"""Online β, ρ, δ, σ² against a quadratic objective whose values are known in closed form.

F_i(w) = β/2 ‖w − c_i‖², F = Σ p_i F_i: ∇F_i(w) = β (w − c_i), ∇F(w) = β (w − c̄), so the
gradient secant is exactly β, δ = Σ p_i β ‖c_i − c̄‖ at every w, and ‖∇F(w)‖ = β ‖w − c̄‖.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from fedfit.policy.dynamite import Estimates, EstimatorState, RoundObservation, observe
from fedfit.policy.dynamite.estimate import noise_variance, pseudo_gradient, smooth

BETA = 3.0
CENTRES = [torch.tensor([1.0, 0.0, 2.0]), torch.tensor([-1.0, 4.0, 0.0]), torch.tensor([0.0, 1.0, 1.0])]
SHARES = [0.5, 0.3, 0.2]
C_BAR = sum((p * c for p, c in zip(SHARES, CENTRES)), torch.zeros(3))


def loss(w: torch.Tensor) -> float:
    return sum(p * BETA / 2 * float(((w - c) ** 2).sum()) for p, c in zip(SHARES, CENTRES))


def exact_round(w: torch.Tensor, samples: int = 10) -> RoundObservation:
    grads = {i: BETA * (w - c) for i, c in enumerate(CENTRES)}
    return RoundObservation(start=w, grads=grads, samples={i: samples for i in grads},
                            shares={i: p for i, p in enumerate(SHARES)}, loss=loss(w))


def test_divergence_is_the_closed_form_at_any_model() -> None:
    state = observe(EstimatorState(), exact_round(torch.tensor([5.0, -2.0, 1.0])), holding=0.0)
    delta = sum(p * BETA * float(torch.linalg.vector_norm(c - C_BAR)) for p, c in zip(SHARES, CENTRES))
    assert state.delta == pytest.approx(delta)


def test_smoothness_lipschitz_and_noise_from_two_rounds() -> None:
    w0, w1 = torch.tensor([5.0, -2.0, 1.0]), torch.tensor([4.0, -1.0, 1.5])
    state = observe(observe(EstimatorState(), exact_round(w0), 0.0), exact_round(w1), 0.0)
    assert state.beta == pytest.approx(BETA)
    assert state.rho == pytest.approx(BETA * float(torch.linalg.vector_norm(w1 - C_BAR)))  # ‖∇F(w1)‖
    assert state.sigma2 == pytest.approx(0.0, abs=1e-6)  # exact gradients carry no noise


def test_pseudo_gradient_of_local_gradient_descent() -> None:
    # s steps of GD with rate η on F_i: w_s = c + (1 − ηβ)^s (w − c), so the pseudo-gradient is
    # (1 − (1 − ηβ)^s) / (η s) · (w − c): the secant of a pair of rounds is that factor.
    lr, steps, w = 0.05, 4, torch.tensor([2.0, 2.0, 2.0])
    end = CENTRES[0] + (1 - lr * BETA) ** steps * (w - CENTRES[0])
    factor = (1 - (1 - lr * BETA) ** steps) / (lr * steps)
    assert torch.allclose(pseudo_gradient(w, end, lr, steps), factor * (w - CENTRES[0]))


def test_noise_variance_by_hand() -> None:
    # ‖Δg‖² = 25, β‖Δw‖ = 3 -> residual 16, over 1/4 + 1/4 -> σ² = 32
    assert noise_variance([(torch.tensor([3.0, 4.0]), 1 / 4 + 1 / 4)], beta=3.0, step=1.0) == pytest.approx(32.0)


def test_estimates_are_smoothed_over_rounds() -> None:
    assert smooth(smooth(None, 1.0, 0.75), 5.0, 0.75) == pytest.approx(2.0)


def test_prior_fills_what_is_not_yet_estimated() -> None:
    state = observe(EstimatorState(), exact_round(torch.tensor([1.0, 1.0, 1.0])), 0.5)
    prior = Estimates(beta=7.0, rho=7.0, delta=7.0, sigma2=7.0, loss=7.0)
    got = state.estimates(prior)
    assert got.beta == 7.0 and got.sigma2 == 7.0 and got.delta != 7.0


def curvature_round(w: torch.Tensor, betas: list[float]) -> RoundObservation:
    """Exact gradients of F_i = β_i/2 ‖w − c_i‖² (devices 0 and 1, equal shares)."""
    grads = {i: b * (w - CENTRES[i]) for i, b in enumerate(betas)}
    return RoundObservation(start=w, grads=grads, samples={i: 10 for i in grads}, shares={0: 1.0, 1: 1.0},
                            loss=1.0)


def test_dissimilarity_is_zero_for_equal_hessians_and_the_curvature_spread_otherwise() -> None:
    w0, w1 = torch.tensor([5.0, -2.0, 1.0]), torch.tensor([4.0, -1.0, 1.5])
    same = observe(observe(EstimatorState(), exact_round(w0), 0.0), exact_round(w1), 0.0)
    assert same.zeta == pytest.approx(0.0, abs=1e-9)
    # β_0 = 1, β_1 = 3: Δg_i = β_i Δw, Δg = 2 Δw, so ζ = (|1 − 2| + |3 − 2|) / 2 = 1; β = 2
    spread = observe(observe(EstimatorState(), curvature_round(w0, [1.0, 3.0]), 0.0),
                     curvature_round(w1, [1.0, 3.0]), 0.0)
    assert spread.zeta == pytest.approx(1.0)
    assert spread.beta == pytest.approx(2.0)



def test_f0_is_the_share_weighted_start_loss_of_the_devices_that_report_one() -> None:
    w = torch.tensor([5.0, -2.0, 1.0])
    # devices 0 and 2 report the received model's loss, device 1 (share 0.3) does not:
    # F0 = (0.5 · 1.0 + 0.2 · 4.0) / (0.5 + 0.2) = 1.3 / 0.7, not the training loss.
    obs = dataclasses.replace(exact_round(w), loss=9.0, start_losses={0: 1.0, 2: 4.0})
    assert observe(EstimatorState(), obs, holding=0.0).loss == pytest.approx(1.3 / 0.7)
    # smoothed like the other estimates: 0.5 · 1.3/0.7 + 0.5 · (0.5 · 3.0 + 0.3 · 1.0 + 0.2 · 2.0)
    again = dataclasses.replace(exact_round(w), loss=9.0, start_losses={0: 3.0, 1: 1.0, 2: 2.0})
    state = observe(observe(EstimatorState(), obs, holding=0.5), again, holding=0.5)
    assert state.loss == pytest.approx(0.5 * 1.3 / 0.7 + 0.5 * 2.2)


def test_f0_falls_back_to_the_training_loss_without_start_losses() -> None:
    obs = dataclasses.replace(exact_round(torch.tensor([5.0, -2.0, 1.0])), loss=0.75,
                              start_losses={0: float("nan")})
    assert observe(EstimatorState(), obs, holding=0.0).loss == pytest.approx(0.75)


def test_noise_variance_pools_residuals_over_the_devices_sampling_variance() -> None:
    # residuals 25 − 9 = 16 and 100 − 9 = 91 over sampling variances 0.5 and 0.1: (16 + 91) / 0.6;
    # a device whose change carries no sampling noise (whole epochs) says nothing about σ²
    changes = [(torch.tensor([3.0, 4.0]), 0.5), (torch.tensor([6.0, 8.0]), 0.1), (torch.tensor([1.0, 0.0]), 0.0)]
    assert noise_variance(changes, beta=3.0, step=1.0) == pytest.approx(107 / 0.6)
    assert noise_variance([(torch.tensor([1.0, 0.0]), 0.0)], beta=0.0, step=1.0) is None


def test_observation_sampling_variance_follows_the_trainers_epochs() -> None:
    obs = dataclasses.replace(exact_round(torch.zeros(3), samples=40), shares={0: 10.0, 1: 100.0, 2: 5.0},
                              steps={0: 1, 1: 2}, batches={0: 4, 1: 20})
    assert obs.draw_variance(0) == pytest.approx(1 / 4 * 6 / 9)  # one batch of 4 of 10
    assert obs.draw_variance(1) == pytest.approx(1 / 40 * 60 / 99)  # 40 of 100 in one pass
    assert obs.draw_variance(2) == pytest.approx(1 / 40)  # batch unknown: independent draws, 1/n
