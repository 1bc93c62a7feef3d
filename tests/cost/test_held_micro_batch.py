"""A device holding fewer samples than its micro-batch is priced at the batch it can run.

The trainer puts at most ``min(micro_batch, samples held)`` samples through one pass; the
references below are the memory model at that batch and the time model's formula written out.
"""

from __future__ import annotations

import torch

from fedfit.cost import MemoryModel, TaskPredictor, measure, task_cost
from fedfit.cost.task_costs import task_costs
from fedfit.models import ModelSpec
from fedfit.policy.readiness import Deferral, readiness
from fedfit.training import train
from fedfit.types import TrainPlan, UtilisationCurve
from tests.helpers import profile, state

SPEC = ModelSpec("logreg", (1, 8, 8), 10)
PHONE = profile(utilisation=UtilisationCurve(0.5, 8.0))


def _cost(plan: TrainPlan, n: int):  # type: ignore[no-untyped-def]
    return task_cost(plan=plan, profile=PHONE, state=state(), cost=measure(SPEC), memory=MemoryModel(),
                     num_examples=n, bytes_down=1000, bytes_up=1000)


def test_one_sample_at_batch_32_is_priced_as_batch_1() -> None:
    cost, memory = measure(SPEC), MemoryModel()
    got = _cost(TrainPlan(0, 0, 32), 1)
    assert memory.peak_bytes(cost, 1) < memory.peak_bytes(cost, 32)
    assert got.peak_memory_bytes == memory.peak_bytes(cost, 1)
    # compute = FLOPs / (FLOP/s · peak · b / (b + h)) at b = 1, one sample, nominal heat
    expected_s = cost.train_flops_per_sample / (1e10 * 0.5 * 1 / (1 + 8.0))
    assert abs(got.compute_s - expected_s) <= 1e-12 * expected_s
    assert got.energy_j == PHONE.compute_power_w * got.compute_s + PHONE.radio_power_w * (got.download_s + got.upload_s)


def test_a_device_holding_its_batch_is_priced_at_it() -> None:
    cost, memory = measure(SPEC), MemoryModel()
    for n in (32, 33, 500):
        assert _cost(TrainPlan(0, 0, 32), n).peak_memory_bytes == memory.peak_bytes(cost, 32)
    assert _cost(TrainPlan(0, 0, 32), 20).peak_memory_bytes == memory.peak_bytes(cost, 20)


def test_step_cap_counts_the_samples_held() -> None:
    """1 sample, 5 epochs, at most 2 steps: the trainer runs 2 steps of 1 sample."""
    got = _cost(TrainPlan(0, 0, 32, local_epochs=5, max_steps=2), 1)
    assert got.flops == 2 * measure(SPEC).train_flops_per_sample
    x, y = torch.randn(1, 1, 8, 8), torch.tensor([3])
    model = SPEC.build()
    update = train(model, model.state_dict(), x, y, TrainPlan(0, 0, 32, local_epochs=5, max_steps=2), seed=1)
    assert (update.samples_processed, update.steps) == (2, 2)


def test_step_cap_counts_the_samples_held_under_accumulation() -> None:
    """10 samples, micro-batch 8 × 4 (a step of 32), 5 epochs, at most 2 steps: 2 steps of 10."""
    plan = TrainPlan(0, 0, 8, accumulation_steps=4, local_epochs=5, max_steps=2)
    assert _cost(plan, 10).flops == 20 * measure(SPEC).train_flops_per_sample
    assert _cost(plan, 10).peak_memory_bytes == MemoryModel().peak_bytes(measure(SPEC), 8)
    model = SPEC.build()
    update = train(model, model.state_dict(), torch.randn(10, 1, 8, 8), torch.arange(10), plan, seed=1)
    assert (update.samples_processed, update.steps) == (20, 2)


def test_round_pricing_matches_task_by_task_for_short_devices() -> None:
    plans = [TrainPlan(d, 0, 16, max_steps=4) for d in range(4)]
    sizes = [1, 40, 7, 16]
    got = task_costs(plans, [PHONE] * 4, [state()] * 4, lambda w: measure(SPEC), MemoryModel(), sizes, [1000] * 4)
    one_by_one = [_cost(TrainPlan(d, 0, min(16, n), max_steps=4), n) for d, n in enumerate(sizes)]
    assert [c.peak_memory_bytes for c in got] == [c.peak_memory_bytes for c in one_by_one]
    assert [c.compute_s for c in got] == [c.compute_s for c in one_by_one]


def test_for_samples_caps_every_epoch() -> None:
    plan = TrainPlan(0, 0, 8, epoch_batches=((8, 1), (4, 2), (16, 1)))
    assert plan.for_samples(6).epoch_batches == ((6, 1), (4, 2), (6, 1))
    assert plan.for_samples(6).micro_batch == 6
    assert plan.for_samples(16) is plan and plan.for_samples(0) is plan


def test_compute_aware_selection_does_not_defer_a_device_short_of_samples() -> None:
    """Free memory for 1 sample, a batch-32 plan: a device holding 1 sample is not memory-short."""
    cost, memory = measure(SPEC), MemoryModel()
    free = state(free_memory_bytes=memory.peak_bytes(cost, 1))
    predictor = TaskPredictor(lambda w: cost, memory, [1, 500])
    one, many = (readiness(TrainPlan(d, 0, 32), PHONE, free, predictor) for d in (0, 1))
    assert (one.affordable_batch, one.planned_batch, many.planned_batch) == (1, 1, 32)
    assert not Deferral().defers(one) and Deferral().defers(many)
