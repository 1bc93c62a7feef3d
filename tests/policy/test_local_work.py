"""Heterogeneous local work: epochs from a compute budget, strong devices 10, constrained 2."""

from __future__ import annotations

from fedfit.cost import MemoryModel, TaskPredictor, compute_time_s, measure
from fedfit.devices import tier
from fedfit.models import ModelSpec
from fedfit.policy import BudgetEpochsPlanner, FixedPlanner
from fedfit.policy.local_work import epochs_for_budget
from tests.helpers import state


def test_epochs_for_budget_floor_and_clamp() -> None:
    assert epochs_for_budget(1.0, 10.0, 1, 10) == 10
    assert epochs_for_budget(0.5, 10.0, 1, 10) == 10  # clamped to max
    assert epochs_for_budget(4.0, 10.0, 1, 10) == 2
    assert epochs_for_budget(30.0, 10.0, 1, 10) == 1  # clamped to min


def test_budget_planner_gives_epochs_from_each_devices_predicted_epoch_time() -> None:
    spec = ModelSpec("cnn", (1, 28, 28), 10)
    cost = measure(spec)
    predictor = TaskPredictor(lambda w: cost, MemoryModel(), [400, 400], 0)
    strong, weak = tier("flagship_phone"), tier("older_phone")
    epoch_s = [compute_time_s(cost.train_flops_per_sample * 400, p, 8, state().thermal) for p in (strong, weak)]
    budget = 10.5 * epoch_s[0]
    planner = BudgetEpochsPlanner(FixedPlanner(batch_size=8), predictor, budget, 1, 10)

    plans = [planner.plan(i, 0, p, state()) for i, p in enumerate((strong, weak))]

    assert plans[0].local_epochs == 10
    assert plans[1].local_epochs == max(1, int(budget // epoch_s[1]))
    assert plans[1].local_epochs < plans[0].local_epochs
    assert plans[0].micro_batch == plans[1].micro_batch == 8  # the base planner decides the rest
