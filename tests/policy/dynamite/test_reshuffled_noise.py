"""The bound's noise term for reshuffled epochs (``dynamite.noise_model: reshuffled``), against
brute force over the trainer's own shuffling and hand-computed searches."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from fedfit.policy.dynamite.bound import Budget, Estimates, bound
from fedfit.policy.dynamite.calibrate import round_loss
from fedfit.policy.dynamite.costs import DeviceCost
from fedfit.policy.dynamite.estimate import RoundObservation
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.policy.dynamite.sampling import step_noise
from fedfit.policy.dynamite.search import search_homogeneous
from fedfit.training.trainer import _batches, task_generator
from fedfit.types import TrainPlan

GRADS = torch.tensor([[0.0, 1.0], [1.0, -2.0], [3.0, 0.5], [4.0, 4.0], [7.0, -1.0]], dtype=torch.float64)


def _sigma2(grads: torch.Tensor) -> float:
    """The per-sample variance (1/D) Σ_j ‖g_j − ḡ‖² (what the σ² probe estimates)."""
    return float(((grads - grads.mean(0)) ** 2).sum(1).mean())


def _sum_error(grads: torch.Tensor, batches: list[torch.Tensor], steps: int) -> float:
    """‖Σ_s mean(g[batch_s]) − τ ∇F‖²: the sampling error of a task's summed step gradients."""
    total = sum((grads[b].mean(0) for b in batches), torch.zeros(grads.shape[1], dtype=grads.dtype))
    return float(((total - steps * grads.mean(0)) ** 2).sum())


def _every_permutation(grads: torch.Tensor, batch: int, steps: int) -> float:
    """E‖Σ_s g_s − τ ∇F‖² over every pair of epoch permutations, the epochs cut as the trainer
    cuts them (batches of ``batch``, the last one short), the first ``steps`` batches kept."""
    d = grads.shape[0]
    per_epoch = -(-d // batch)
    assert per_epoch < steps <= 2 * per_epoch or steps <= per_epoch
    g = grads.numpy()

    def epoch_sums(kept: int) -> np.ndarray:  # Σ of the first ``kept`` batch means, per permutation
        return np.array([sum((g[list(p[i:i + batch])].mean(0) for i in range(0, d, batch)[:kept]),
                             np.zeros(g.shape[1])) for p in itertools.permutations(range(d))])

    first, second = epoch_sums(min(steps, per_epoch)), epoch_sums(max(0, steps - per_epoch))
    totals = first[:, None, :] + second[None, :, :] - steps * g.mean(0)  # every pair of permutations
    return float((totals ** 2).sum(-1).mean())


@pytest.mark.parametrize(("batch", "steps"), [(2, 3), (2, 4), (2, 5), (3, 2), (3, 3), (4, 2), (5, 2), (1, 7)])
def test_step_noise_is_the_summed_steps_sampling_error_over_every_permutation(batch: int, steps: int) -> None:
    # E‖Σ_s g_s − τ∇F‖² = σ² · τ · v  (v = step_noise: τ × the variance of the mean step gradient)
    assert steps * _sigma2(GRADS) * step_noise(5, batch, steps) == pytest.approx(
        _every_permutation(GRADS, batch, steps), rel=1e-9)


def test_whole_epochs_carry_only_the_short_batchs_error() -> None:
    # D = 5, b = 2: an epoch is batches 2, 2, 1; its sum over-weighs the short batch's sample
    assert step_noise(5, 2, 3) > 0 and _every_permutation(GRADS, 2, 3) > 0
    even = torch.cat([GRADS[:4], GRADS[:2]])  # D = 6, b = 2 or 3: whole epochs sum to τ∇F exactly
    assert step_noise(6, 2, 3) == step_noise(6, 3, 4) == step_noise(6, 6, 5) == 0.0
    plan = TrainPlan(0, 0, micro_batch=3, local_epochs=2, max_steps=4)
    batches = [idx for idx, _ in _batches(6, plan, task_generator(1, 0, 0))]
    assert _sum_error(even, batches, 4) == pytest.approx(0.0, abs=1e-20)


@pytest.mark.parametrize(("micro", "accumulation", "steps"), [(3, 1, 4), (2, 2, 5), (4, 1, 9)])
def test_step_noise_matches_the_trainers_own_shuffling(micro: int, accumulation: int, steps: int) -> None:
    """Tasks drawn through the trainer's batching (its generator, epochs, short last batch, step
    cap, accumulation): the mean squared error of the summed steps is σ²τv within 4 standard errors."""
    torch.manual_seed(0)
    grads = torch.randn(11, 3, dtype=torch.float64) * torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
    plan = TrainPlan(0, 0, micro_batch=micro, accumulation_steps=accumulation, local_epochs=5, max_steps=steps)
    errors = []
    for task in range(3000):
        batches = [idx for idx, _ in _batches(11, plan, task_generator(7, 0, task))]
        assert len(batches) == steps
        errors.append(_sum_error(grads, batches, steps))
    mean = sum(errors) / len(errors)
    stderr = math.sqrt(sum((e - mean) ** 2 for e in errors) / (len(errors) - 1) / len(errors))
    expected = steps * _sigma2(grads) * step_noise(11, micro * accumulation, steps)
    assert abs(mean - expected) < 4 * stderr


def test_reshuffled_noise_is_never_above_independent_draws_of_the_same_batches() -> None:
    for d, b, tau in itertools.product((7, 20, 64), (1, 3, 8, 30), (1, 5, 50)):
        epoch = [len(c) for c in torch.arange(d).split(b)]
        sizes = (epoch * tau)[:tau]  # the trainer's batch sizes, a short one ending each epoch
        assert step_noise(d, b, tau) <= sum(1 / s for s in sizes) / tau + 1e-12


def _device(**kw: object) -> DeviceCost:
    base: dict[str, object] = dict(sample_s=0.01, half_batch=0.0, comm_s=1.0, compute_power_w=1.0,
                                   radio_power_w=1.0, micro_cap=12, data_size=12)
    return DeviceCost(**{**base, **kw})  # type: ignore[arg-type]


def test_bound_prices_reshuffled_noise_by_hand() -> None:
    # one device, D = 12, σ² = 100, β = 1, η = 0.1, no drift (δ = 0): Φ = 1/(ηKτ) + 5 · v
    est, budget = Estimates(beta=1.0, rho=1.0, delta=0.0, sigma2=100.0, loss=1.0), Budget(time_s=10.0)
    device = _device(reshuffled=True)
    # τ = 3 of b = 3: 9 of 12 samples, v = 3 · (3 · 1/3 − 9/12) · 12/11 / 9 = 1/11; K = 10 / 1.09
    assert bound(3, [3], [device], [1.0], est, 0.1, budget) == pytest.approx(1.09 / 3 + 5 / 11)
    # the same under independent draws: v = 1/b
    assert bound(3, [3], [_device()], [1.0], est, 0.1, budget) == pytest.approx(1.09 / 3 + 5 / 3)


def test_search_takes_the_batch_whose_task_covers_an_epoch() -> None:
    """τ ≤ 3 over D = 12: b = 4 at τ = 3 is one whole epoch (no noise) at the least compute, so
    Φ = 1.12/3; independent draws price b = 4 at 5/4 and take the largest batch instead."""
    est, budget = Estimates(beta=1.0, rho=1.0, delta=0.0, sigma2=100.0, loss=1.0), Budget(time_s=10.0)
    found = search_homogeneous([_device(reshuffled=True)], [1.0], est, 0.1, budget, tau_max=3)
    assert (found.tau, found.batches) == (3, (4,)) and found.bound == pytest.approx(1.12 / 3)
    iid = search_homogeneous([_device()], [1.0], est, 0.1, budget, tau_max=3)
    assert (iid.tau, iid.batches) == (3, (12,)) and iid.bound == pytest.approx(1.36 / 3 + 5 / 12)


def test_calibration_plans_the_rounds_noise_with_the_same_model() -> None:
    # one device, 4 steps of 3 over 12 samples: a whole epoch, so no noise in the planned progress
    obs = RoundObservation(start=None, grads={1: None}, samples={1: 12}, shares={1: 12.0}, loss=1.0,
                           version=2, steps={1: 4}, start_losses={1: 2.0}, batches={1: 3})
    est = Estimates(beta=2.0, rho=1.0, delta=3.0, sigma2=10.0, loss=1.0)
    assert round_loss(obs, est, 0.1, reshuffled=True).progress == pytest.approx(0.1 * 4 * 1.0)
    assert round_loss(obs, est, 0.1).progress == pytest.approx(0.1 * 4 * (1.0 - 2 * 0.1 * 10 / 2 / 3))


def test_config_key_reaches_the_planner_on_static_data_only() -> None:
    from fedfit.errors import ConfigError
    from fedfit.experiment import built
    from tests.policy.dynamite.test_dynamite_end_to_end import small

    stream = {"stream": {"rate_per_s": 1.0, "buffer_size": 20, "initial": 4}}
    cases = ((small(dynamite={"noise_model": "reshuffled"}), "reshuffled"), (small(dynamite={"noise_model": "iid"}), "iid"),
             (small(data=stream, dynamite={"noise_model": "reshuffled"}), "iid"))
    for config, expected in cases:
        with built(config) as exp:
            planner = exp.orchestrator.observer
            assert isinstance(planner, DynamitePlanner)
            assert planner.settings.noise_model == expected
            device = planner._device(planner.registry.ids()[0], 40)
            assert device.reshuffled is (expected == "reshuffled")
    with pytest.raises((ConfigError, ValueError), match="noise_model"):
        small(dynamite={"noise_model": "poisson"})
