"""DYNAMITE's cost model agrees with fedfit's time model, and measured durations win."""

from __future__ import annotations

import pytest

from fedfit.cost import MemoryModel, ModelCost
from fedfit.cost.time import task_cost
from fedfit.policy.dynamite import DeviceCost, device_cost
from fedfit.types import TrainPlan, UtilisationCurve
from tests.helpers import profile, state

COST = ModelCost(num_params=1000, param_bytes=4000, train_flops_per_sample=3e6, forward_flops_per_sample=1e6,
                 activation_bytes_per_sample=1e5, activation_fixed_bytes=0.0)


def test_round_time_matches_fedfits_task_cost() -> None:
    p, s, memory = profile(utilisation=UtilisationCurve(0.5, 4.0)), state(), MemoryModel()
    d = device_cost(p, s, COST, memory, data_size=200, payload_bytes=4000)
    plan = TrainPlan(device_id=0, round=0, micro_batch=16, local_epochs=10, max_steps=5)
    reference = task_cost(plan=plan, profile=p, state=s, cost=COST, memory=memory, num_examples=200,
                          bytes_down=4000, bytes_up=4000)
    assert d.round_s(5, 16) == pytest.approx(reference.duration_s)
    assert d.round_j(5, 16) == pytest.approx(reference.energy_j)


def test_micro_cap_comes_from_the_memory_model() -> None:
    p, memory = profile(), MemoryModel(workspace_bytes=0)
    free = memory.peak_bytes(COST, 0) + 7 * 100_000  # room for exactly 7 samples of activations
    d = device_cost(p, state(free_memory_bytes=free), COST, memory, data_size=500, payload_bytes=4000)
    assert d.micro_cap == 7 and d.batch_cap == 7


def test_batch_cap_never_exceeds_the_data() -> None:
    d = DeviceCost(0.01, 0.0, 1.0, 1.0, 1.0, micro_cap=64, data_size=20)
    assert d.batch_cap == 20


def test_accumulated_step_costs_each_micro_batch() -> None:
    # b = 20 with cap 8: k = 3 micro-batches of 8 -> 0.01 * 3 * (8 + 2) = 0.3 s
    d = DeviceCost(0.01, 2.0, 1.0, 1.0, 1.0, micro_cap=8, data_size=100, max_accumulation=3)
    assert d.step_s(20) == pytest.approx(0.3)


def test_largest_batch_within_a_round_time() -> None:
    # round = 4 * 0.01 * b + 1 <= 2  ->  b <= 25
    d = DeviceCost(0.01, 0.0, 1.0, 1.0, 1.0, micro_cap=100, data_size=100)
    assert d.largest_batch_within(4, 2.0) == 25
    assert d.largest_batch_within(4, 0.5) == 0


def test_measured_duration_rescales_the_prediction() -> None:
    d = DeviceCost(0.01, 0.0, 1.0, 1.0, 1.0, micro_cap=100, data_size=100)
    slow = d.calibrated(measured_s=4.0, predicted_s=2.0)
    assert slow.round_s(4, 25) == pytest.approx(2 * d.round_s(4, 25))
    assert d.calibrated(measured_s=float("inf"), predicted_s=2.0) == d
