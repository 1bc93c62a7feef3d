"""The bound's noise on a stream buffer (policy/dynamite/stream.py) against hand-computed values
and a simulation of the trainer's sampling from a buffer drawn from a population."""

from __future__ import annotations

import math
import random

import pytest
import torch

from fedfit.policy.dynamite import Budget, DeviceCost, Estimates, bound
from fedfit.policy.dynamite.calibrate import round_loss
from fedfit.policy.dynamite.estimate import RoundObservation
from fedfit.policy.dynamite.search import search_homogeneous_at
from fedfit.policy.dynamite.stream import stream_noise, task_draws


def test_task_draws_by_hand() -> None:
    # D = 20, b = 8: epochs of 3 steps (8, 8, 4 samples)
    assert task_draws(3, 8, 20) == (20, 0)   # exactly one pass
    assert task_draws(5, 8, 20) == (36, 16)  # one pass, then 2 steps of 8
    assert task_draws(4, 8, 20) == (28, 8)
    assert task_draws(2, 50, 20) == (40, 0)  # a batch above the buffer is the whole buffer


def test_whole_passes_cost_tau_over_d_whatever_the_batch() -> None:
    # τ·b a multiple of D: the task mean is the buffer mean, variance σ²/D, per step τ/D
    assert stream_noise(10, 4, 8) == pytest.approx(10 / 8)
    assert stream_noise(10, 8, 8) == pytest.approx(10 / 8)
    assert stream_noise(50, 64, 64) == pytest.approx(50 / 64)


def test_partial_pass_by_hand() -> None:
    # τ = 2, b = 3, D = 10: r = n = 6; Var = σ²(6·4/(9·36) + 1/10); per step × 2
    assert stream_noise(2, 3, 10) == pytest.approx(2 * (24 / 324 + 0.1))
    # one sample from a buffer of one: only the buffer's own error, 1/D = 1
    assert stream_noise(1, 1, 1) == pytest.approx(1.0)


def test_one_pass_over_part_of_a_large_buffer_is_the_static_term() -> None:
    for b in (1, 4, 16):
        assert stream_noise(3, b, 1_000_000) == pytest.approx(1 / b, rel=1e-4)


def _simulated_variance(tau: int, batch: int, held: int, reps: int, rng: random.Random) -> float:
    """Var of a task's mean sample, population N(0, 1): a buffer of ``held`` i.i.d. draws, then
    ``tau`` batches walking fresh permutations of it (the trainer's order: an epoch's last batch
    is what is left of the permutation)."""
    means = []
    for _ in range(reps):
        buffer = [rng.gauss(0.0, 1.0) for _ in range(held)]
        total, count, steps = 0.0, 0, 0
        while steps < tau:
            order = rng.sample(range(held), held)
            for k in range(0, held, batch):
                if steps == tau:
                    break
                part = order[k:k + batch]
                total, count, steps = total + sum(buffer[i] for i in part), count + len(part), steps + 1
        means.append(total / count)
    mean = sum(means) / reps
    return sum((m - mean) ** 2 for m in means) / (reps - 1)


@pytest.mark.parametrize(("tau", "batch", "held"), [(5, 8, 20), (50, 8, 64), (3, 4, 40), (7, 16, 16)])
def test_matches_a_simulation_of_the_trainers_sampling(tau: int, batch: int, held: int) -> None:
    variance = _simulated_variance(tau, batch, held, reps=4000, rng=random.Random(tau * 1000 + held))
    assert variance * tau == pytest.approx(stream_noise(tau, batch, held), rel=0.08)


def test_device_noise_term_static_and_streaming() -> None:
    static = DeviceCost(0.01, 0.0, 1.0, 1.0, 1.0, micro_cap=64, data_size=8)
    streaming = DeviceCost(0.01, 0.0, 1.0, 1.0, 1.0, micro_cap=64, data_size=8, streaming=True)
    assert static.noise(0.5, 10, 4) == pytest.approx(0.25 / 4)
    assert streaming.noise(0.5, 10, 4) == pytest.approx(0.25 * 10 / 8)


def test_bound_on_a_stream_stops_rewarding_batches_that_reread_the_buffer() -> None:
    # no budget (K = ∞: no optimisation term), δ = 0 (no drift): Φ = βησ²/2 · p² · v
    est = Estimates(beta=2.0, rho=1.0, delta=0.0, sigma2=5.0, loss=1.0)
    scale = 2.0 * 0.1 * 5.0 / 2
    for streaming, expect in ((False, {4: scale / 4, 8: scale / 8}), (True, {4: scale * 10 / 8, 8: scale * 10 / 8})):
        d = DeviceCost(0.01, 0.0, 1.0, 1.0, 1.0, micro_cap=64, data_size=8, streaming=streaming)
        for b, value in expect.items():
            assert bound(10, [b], [d], [1.0], est, 0.1, Budget()) == pytest.approx(value)


def test_calibration_plans_the_stream_noise() -> None:
    # one device, 4 steps of b = 10 over D = 20 (two whole passes): v = 4/20 = 0.2 instead of 4/40;
    # N = βησ²/2 · v = 1 · v; progress = η τ (ρ² − N) = 0.4 (1 − N)
    obs = RoundObservation(start=torch.zeros(1), grads={1: torch.zeros(1)}, samples={1: 40}, shares={1: 20.0},
                           loss=1.0, version=3, steps={1: 4}, start_losses={1: 2.0})
    est = Estimates(beta=2.0, rho=1.0, delta=3.0, sigma2=10.0, loss=1.0)
    assert round_loss(obs, est, lr=0.1).progress == pytest.approx(0.4 * (1 - 0.1))
    assert round_loss(obs, est, lr=0.1, streaming=True).progress == pytest.approx(0.4 * (1 - 0.2))
    assert math.isfinite(round_loss(obs, est, lr=0.1, streaming=True).drift)


def test_a_stream_device_takes_the_smallest_batch_that_covers_its_buffer() -> None:
    # one device, τ = 4, D = 8, a = 0.01 s/sample, comm 1 s, T = 100 s, F0 = 1, η = 0.1, βσ² = 4, δ = 0:
    # optimisation 1/(0.1·4·K) with K = 100/(0.04 b + 1): 0.025 + 0.001 b; noise 0.2 · v.
    # static v = 1/b: 0.001 b + 0.2/b falls all the way to the cap, b = 8.
    # stream v(4, b, 8) = 0.5 for b = 2 and every b ≥ 4 (whole passes), 1.07 at b = 1, 0.57 at b = 3: b = 2.
    est = Estimates(beta=1.0, rho=1.0, delta=0.0, sigma2=4.0, loss=1.0)
    for streaming, expect in ((False, 8), (True, 2)):
        d = DeviceCost(0.01, 0.0, 1.0, 1.0, 1.0, micro_cap=64, data_size=8, streaming=streaming)
        assert search_homogeneous_at(4, [d], [1.0], est, 0.1, Budget(time_s=100.0)) == (expect,)
