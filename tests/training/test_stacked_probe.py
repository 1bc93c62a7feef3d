"""The σ² probe inside the batched cohort op against the one-by-one trainer's probe (the
reference, itself checked against closed forms in test_probe.py), device by device."""

from __future__ import annotations

import pytest
import torch

from fedfit.training import OptimizerConfig, train
from fedfit.training.batched import batchable_plan, train_cohort
from fedfit.training.probe import half_batch_sigma2
from fedfit.training.stacked_probe import probe_weights
from fedfit.training.trainer import task_generator
from fedfit.types import TrainPlan
from tests.training.cohorts import SIZES, cohort, max_diff


def _plans(devices: int, probing: set[int]) -> list[TrainPlan]:
    """Effective batch 16 as one micro-batch or 4 × 4 accumulated, two epochs; ``probing`` ask σ²."""
    return [TrainPlan(i, 3, micro_batch=16 if i % 2 else 4, accumulation_steps=1 if i % 2 else 4, local_epochs=2,
                      lr=0.05, sigma_probe=i in probing) for i in range(devices)]


@pytest.mark.parametrize("name", ["logreg", "mlp"])
@pytest.mark.parametrize("devices", [2, 5, 12])
def test_probing_cohort_equals_one_by_one(name: str, devices: int) -> None:
    """Probe on and off mixed in one cohort: parameters, losses and σ̂² as one by one."""
    model, starts, data = cohort(name, devices)
    plans = _plans(devices, probing={i for i in range(devices) if i % 3 != 2})
    optimizer = OptimizerConfig(momentum=0.9)
    batched = train_cohort(model, starts, data, plans, seed=1, optimizer=optimizer)
    for start, (x, y), plan, got in zip(starts, data, plans, batched, strict=True):
        ref = train(model, start, x, y, plan, seed=1, optimizer=optimizer)
        assert max_diff(ref.params, got.params) <= 1e-5
        assert got.train_loss == pytest.approx(ref.train_loss, rel=1e-5)
        assert got.start_loss == pytest.approx(ref.start_loss, rel=1e-5)
        if ref.sigma2 is None:
            assert got.sigma2 is None
        else:
            assert got.sigma2 == pytest.approx(ref.sigma2, rel=1e-5)
    expected_none = {i for i in range(devices) if i % 3 == 2 or SIZES[i] < 2}
    assert {i for i, u in enumerate(batched) if u.sigma2 is None} == expected_none


def test_the_probe_leaves_the_cohorts_training_bitwise_unchanged() -> None:
    model, starts, data = cohort("mlp", 6)
    probed = train_cohort(model, starts, data, _plans(6, probing=set(range(6))), seed=2)
    plain = train_cohort(model, starts, data, _plans(6, probing=set()), seed=2)
    for a, b in zip(probed, plain, strict=True):
        assert all(torch.equal(a.params[k], b.params[k]) for k in a.params)
        assert (a.train_loss, a.start_loss, b.sigma2) == (b.train_loss, b.start_loss, None)


def test_the_probe_is_the_first_batchs_half_difference() -> None:
    """σ̂² of each device equals half_batch_sigma2 on the very batch the trainer draws first
    (the task RNG's first permutation's first 16 indices), at the device's starting parameters."""
    model, starts, data = cohort("logreg", 4)
    plans = _plans(4, probing=set(range(4)))
    batched = train_cohort(model, starts, data, plans, seed=5)
    for start, (x, y), plan, got in zip(starts, data, plans, batched, strict=True):
        first = torch.randperm(len(x), generator=task_generator(5, plan.device_id, plan.round))[:16]
        model.load_state_dict(start)
        assert got.sigma2 == pytest.approx(half_batch_sigma2(model, x, y, first), rel=1e-5)


def test_signed_weights_by_hand() -> None:
    """b = 3: A = {0} (1/1), B = {1, 2} (−1/2 each); b = 4: two and two; a padded width of 5."""
    weights = probe_weights(torch.tensor([3.0, 4.0]), 5)
    assert weights.tolist() == [[1.0, -0.5, -0.5, 0.0, 0.0], [0.5, 0.5, -0.5, -0.5, 0.0]]
    assert weights.sum(1).tolist() == [0.0, 0.0]  # Σ w = 0: the mean gradient cancels


def test_probing_plans_are_batched() -> None:
    assert batchable_plan(TrainPlan(0, 0, micro_batch=8, sigma_probe=True), OptimizerConfig())
