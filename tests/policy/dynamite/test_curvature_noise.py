"""The curvature-aware noise term (``dynamite.noise_model: curvature``): against local SGD on a
quadratic iterated over every epoch permutation, its two limits, and the planner's wiring."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
import torch

from fedfit.policy.dynamite.bound import Estimates
from fedfit.policy.dynamite.calibrate import round_loss
from fedfit.policy.dynamite.costs import DeviceCost
from fedfit.policy.dynamite.curvature import contracted_noise, contracted_variances, contraction
from fedfit.policy.dynamite.estimate import EstimatorState, RoundObservation, observe, probed_noise_curvature
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.policy.dynamite.sampling import step_noise
from fedfit.types import TaskCost, TaskResult, TrainPlan, Update
from tests.helpers import profile, state

TARGETS = np.array([[0.0, 1.0], [1.0, -2.0], [3.0, 0.5], [4.0, 4.0], [7.0, -1.0]])


def _batches(order: tuple[int, ...], batch: int) -> list[list[int]]:
    return [list(order[i:i + batch]) for i in range(0, len(order), batch)]


def _sgd_error_on_quadratic(lam: float, lr: float, batch: int, steps: int) -> float:
    """E‖w_τ − v_τ‖² of local SGD on f_j(w) = λ/2 ‖w − a_j‖² against full-batch GD from the same
    start, over every pair of epoch permutations of the 5 samples (batches of ``batch``, the last
    short, the first ``steps`` kept): the noise a round ends with, with no formula in between."""
    d = len(TARGETS)
    per_epoch = -(-d // batch)
    assert steps <= 2 * per_epoch
    mean = TARGETS.mean(0)
    errors = []
    for first, second in itertools.product(itertools.permutations(range(d)), repeat=2):
        w = v = np.zeros(2)
        for idx in (_batches(first, batch) + _batches(second, batch))[:steps]:
            w = w - lr * lam * (w - TARGETS[idx].mean(0))
            v = v - lr * lam * (v - mean)
        errors.append(float(((w - v) ** 2).sum()))
    return float(np.mean(errors))


@pytest.mark.parametrize(("batch", "steps", "lam"), [(2, 3, 4.0), (2, 5, 4.0), (3, 4, 10.0), (1, 7, 2.0), (2, 4, 19.0)])
def test_contracted_variance_is_local_sgds_error_on_a_quadratic(batch: int, steps: int, lam: float) -> None:
    # e_τ = −η Σ_s q^{τ−1−s} ξ_s, ξ_s = λ(ā − mean a_batch): E‖e_τ‖² = η² σ² V(q), σ² = λ² Var(a)
    lr = 0.05
    sigma2 = lam * lam * float(((TARGETS - TARGETS.mean(0)) ** 2).sum(1).mean())
    v, _, _ = contracted_variances(5, batch, steps, contraction(lr, lam))
    assert lr * lr * sigma2 * v == pytest.approx(_sgd_error_on_quadratic(lam, lr, batch, steps), rel=1e-9)


@pytest.mark.parametrize(("examples", "batch", "steps"),
                         [(5, 2, 3), (12, 4, 6), (12, 5, 7), (180, 8, 50), (181, 3, 50), (40, 40, 3), (7, 1, 20)])
def test_no_curvature_gives_the_reshuffled_term(examples: int, batch: int, steps: int) -> None:
    assert contracted_noise(examples, batch, steps, 1.0) == pytest.approx(step_noise(examples, batch, steps),
                                                                          rel=1e-9, abs=1e-15)
    assert contracted_noise(examples, batch, steps, 1 - 1e-12) == pytest.approx(
        step_noise(examples, batch, steps), rel=1e-6, abs=1e-12)


@pytest.mark.parametrize(("examples", "batch", "steps"), [(12, 4, 6), (180, 8, 50), (1000, 16, 50), (100, 3, 40)])
def test_large_curvature_gives_independent_draws_up_to_sampling_without_replacement(
        examples: int, batch: int, steps: int) -> None:
    # ηβ_σ ≥ 1: each step forgets the ones before it; the last batch of b out of D carries
    # (1/b)(D − b)/(D − 1) (b divides D here or the last step is a full batch)
    expected = (examples - batch) / (examples - 1) / batch
    assert contraction(0.05, 40.0) == 0.0
    assert contracted_noise(examples, batch, steps, 0.0) == pytest.approx(expected, rel=1e-9)
    assert contracted_noise(1_000_000, batch, steps, 0.0) == pytest.approx(1 / batch, rel=1e-4)  # → iid's 1/b


def test_the_term_lies_between_the_reshuffled_and_independent_limits() -> None:
    for q in (0.0, 0.3, 0.8, 0.95, 0.99, 1.0):
        v = contracted_noise(180, 8, 50, q)
        assert step_noise(180, 8, 50) - 1e-12 <= v <= 1 / 8
    # the fraction of independent draws' noise left grows as the steps forget: dyn14h's 0.07 → 0.9
    assert contracted_noise(180, 8, 50, 0.99) < contracted_noise(180, 8, 50, 0.9) < contracted_noise(180, 8, 50, 0.5)


def test_device_cost_and_calibration_use_the_contracted_term() -> None:
    d = DeviceCost(0.01, 4.0, 1.0, 2.0, 1.0, micro_cap=64, data_size=12, reshuffled=True, contraction=0.0)
    assert d.noise(0.5, 3, 4) == pytest.approx(0.25 * (12 - 4) / 11 / 4)  # 1/4 · 8/11, × p²
    obs = RoundObservation(start=None, grads={1: None}, samples={1: 12}, shares={1: 12.0}, loss=1.0,
                           version=2, steps={1: 3}, start_losses={1: 2.0}, batches={1: 4})
    est = Estimates(beta=2.0, rho=1.0, delta=3.0, sigma2=10.0, loss=1.0)
    assert round_loss(obs, est, 0.1, contraction=1.0).progress == pytest.approx(0.1 * 3)  # a whole epoch
    noise = 2.0 * 0.1 * 10.0 / 2 * (8 / 11 / 4)
    assert round_loss(obs, est, 0.1, contraction=0.0).progress == pytest.approx(0.1 * 3 * (1.0 - noise))


def test_beta_sigma_is_the_share_weighted_probe_mean_smoothed_over_rounds() -> None:
    def obs(curvatures: dict[int, float]) -> RoundObservation:
        return RoundObservation(start=torch.zeros(2), grads={1: torch.ones(2), 2: torch.ones(2)},
                                samples={1: 10, 2: 10}, shares={1: 100.0, 2: 300.0}, loss=1.0,
                                curvatures=curvatures)

    assert probed_noise_curvature(obs({1: 8.0, 2: 4.0})) == pytest.approx(5.0)
    assert probed_noise_curvature(obs({})) is None
    first = observe(EstimatorState(), obs({1: 8.0, 2: 4.0}), holding=0.5)
    second = observe(first, obs({1: 1.0, 2: 1.0}), holding=0.5)
    assert first.noise_curvature == pytest.approx(5.0) and second.noise_curvature == pytest.approx(3.0)
    prior = Estimates(beta=1.0, rho=1.0, delta=1.0, sigma2=1.0, loss=1.0)
    assert second.estimates(prior).noise_curvature == pytest.approx(3.0)


def test_the_planner_asks_for_the_probe_and_prices_the_measured_curvature() -> None:
    from tests.policy.dynamite.test_reachable import fleet_planner

    p = fleet_planner(offline=set())
    p.settings = dataclasses.replace(p.settings, sigma_probe=True, noise_model="curvature")
    plan = p.plan(0, 0, profile(), state())
    assert plan.sigma_probe and plan.curvature_probe
    before = p._device(0, 40).contraction
    assert before == pytest.approx(max(0.0, 1 - p.lr * p.estimates().beta))  # β̂ until a probe reports
    cost = TaskCost(0.5, 1.0, 0.5, 3.0, 0, 0, 0, 0.0)
    results = [TaskResult(TrainPlan(d, 0, micro_batch=4, lr=0.1), "test", 0.0, 2.0, Update(
        d, 0, {"w": torch.full((3,), 0.1 * (d + 1))}, size, 40, 10, 4, 1, 1.0, sigma2=1.0, noise_curvature=c),
        cost, 0) for d, size, c in ((0, 100, 3.0), (1, 300, 7.0))]
    p.observe(1, {"w": torch.zeros(3)}, results, 1.0)
    measured = (100 * 3.0 + 300 * 7.0) / 400
    assert p.estimator.noise_curvature == pytest.approx(measured)
    assert p._device(0, 40).contraction == pytest.approx(contraction(p.lr, measured))
    p.settings = dataclasses.replace(p.settings, noise_model="reshuffled")
    assert p._device(0, 40).contraction is None and not p.plan(0, 1, profile(), state()).curvature_probe


def test_config_key_reaches_the_planner_and_bad_values_are_refused() -> None:
    from fedfit.errors import ConfigError
    from fedfit.experiment import built
    from tests.policy.dynamite.test_dynamite_end_to_end import small

    assert small().dynamite.noise_model == "curvature"  # the default
    with built(small(dynamite={"noise_model": "curvature"})) as exp:
        planner = exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner)
        assert planner.settings.noise_model == "curvature"
        assert planner._device(planner.registry.ids()[0], 40).contraction is not None
    with built(small(dynamite={"sigma_probe": False})) as exp:  # no probe: β̂ stands in for β_σ
        planner = exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner)
        assert not planner.plan(0, 0, profile(), state()).curvature_probe
        assert planner._device(0, 40).contraction == pytest.approx(contraction(planner.lr, planner.estimates().beta))
    with pytest.raises((ConfigError, ValueError), match="noise_model"):
        small(dynamite={"noise_model": "hessian"})
