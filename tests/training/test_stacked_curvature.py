"""The curvature probe inside the batched cohort op against the one-by-one trainer's probe (the
reference, itself checked against closed forms in test_curvature_probe.py), device by device."""

from __future__ import annotations

import pytest
import torch

from fedfit.training import OptimizerConfig, train
from fedfit.training.batched import batchable_plan, train_cohort
from fedfit.training.curvature_probe import half_batch_probe
from fedfit.training.trainer import task_generator
from fedfit.types import TrainPlan
from tests.training.cohorts import SIZES, cohort, max_diff


def _plans(devices: int, sigma: set[int], curvature: set[int]) -> list[TrainPlan]:
    """Effective batch 16 as one micro-batch or 4 × 4 accumulated, two epochs."""
    return [TrainPlan(i, 3, micro_batch=16 if i % 2 else 4, accumulation_steps=1 if i % 2 else 4, local_epochs=2,
                      lr=0.05, sigma_probe=i in sigma | curvature, curvature_probe=i in curvature)
            for i in range(devices)]


@pytest.mark.parametrize(("name", "devices"), [(n, d) for n in ("logreg", "mlp") for d in (2, 5, 12)] + [("cnn", 5)])
def test_curvature_probing_cohort_equals_one_by_one(name: str, devices: int) -> None:
    """Curvature probes, σ² probes alone and plain plans in one cohort: parameters, losses, σ̂²
    and β̂_σ as one by one."""
    model, starts, data = cohort(name, devices)
    plans = _plans(devices, sigma={i for i in range(devices) if i % 3 == 1},
                   curvature={i for i in range(devices) if i % 3 == 0 or i == 1 and devices == 2})
    optimizer = OptimizerConfig(momentum=0.9)
    batched = train_cohort(model, starts, data, plans, seed=1, optimizer=optimizer)
    for start, (x, y), plan, got in zip(starts, data, plans, batched, strict=True):
        ref = train(model, start, x, y, plan, seed=1, optimizer=optimizer)
        assert max_diff(ref.params, got.params) <= 1e-5
        assert got.train_loss == pytest.approx(ref.train_loss, rel=1e-5)
        assert (got.sigma2 is None, got.noise_curvature is None) == (ref.sigma2 is None, ref.noise_curvature is None)
        if ref.sigma2 is not None:
            assert got.sigma2 == pytest.approx(ref.sigma2, rel=1e-5)
        if ref.noise_curvature is not None:
            assert got.noise_curvature == pytest.approx(ref.noise_curvature, rel=1e-4, abs=1e-7)
    expected = {i for i, p in enumerate(plans) if p.curvature_probe and SIZES[i] >= 2}
    assert {i for i, u in enumerate(batched) if u.noise_curvature is not None} == expected
    assert expected  # at least one device took the probe


def test_the_hessian_is_the_next_batchs_along_the_halves_difference() -> None:
    """β̂_σ of each device equals half_batch_probe with the batch the trainer draws first (the
    task RNG's first permutation's first 16 indices) split in halves and the Hessian over the next
    16 (or the first batch again when the device holds no more), at its starting parameters."""
    model, starts, data = cohort("mlp", 4)
    plans = _plans(4, sigma=set(), curvature=set(range(4)))
    batched = train_cohort(model, starts, data, plans, seed=5)
    for start, (x, y), plan, got in zip(starts, data, plans, batched, strict=True):
        order = torch.randperm(len(x), generator=task_generator(5, plan.device_id, plan.round))
        other = order[16:32] if len(x) > 16 else order[:16]
        model.load_state_dict(start)
        sigma2, curvature = half_batch_probe(model, x, y, order[:16], other)
        assert got.sigma2 == pytest.approx(sigma2, rel=1e-5)
        assert got.noise_curvature == pytest.approx(curvature, rel=1e-4)


def test_the_curvature_probe_leaves_training_and_the_global_rng_unchanged() -> None:
    model, starts, data = cohort("mlp", 6)
    rng = torch.get_rng_state()
    probed = train_cohort(model, starts, data, _plans(6, sigma=set(), curvature=set(range(6))), seed=2)
    assert torch.equal(torch.get_rng_state(), rng)
    plain = train_cohort(model, starts, data, _plans(6, sigma=set(), curvature=set()), seed=2)
    for a, b in zip(probed, plain, strict=True):
        assert all(torch.equal(a.params[k], b.params[k]) for k in a.params)
        assert (a.train_loss, a.start_loss, b.noise_curvature) == (b.train_loss, b.start_loss, None)


def test_curvature_probing_plans_are_batched() -> None:
    assert batchable_plan(TrainPlan(0, 0, micro_batch=8, sigma_probe=True, curvature_probe=True), OptimizerConfig())
