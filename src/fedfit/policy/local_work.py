"""Heterogeneous local work: each device trains as many epochs as fit a time budget.

Seed 000: "a device with high compute might perform 10 local epochs, while a constrained device
may only manage 2". The planner predicts one epoch's compute time from the device's profile and
last reported state (the cost model's arithmetic) and gives it ``floor(budget / epoch time)``
epochs, clamped to [min, max]. Aggregate such updates with FedNova
(:mod:`fedfit.aggregation.fednova`) so the extra steps of strong devices do not skew the model.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from fedfit.cost.predictor import TaskPredictor
from fedfit.policy.planning import Planner
from fedfit.types import DeviceProfile, DeviceState, TrainPlan


def epochs_for_budget(epoch_s: float, budget_s: float, min_epochs: int, max_epochs: int) -> int:
    """``floor(budget_s / epoch_s)`` clamped to ``[min_epochs, max_epochs]``.

    >>> epochs_for_budget(0.9, 10.0, 1, 10), epochs_for_budget(4.0, 10.0, 1, 10), epochs_for_budget(30.0, 10.0, 1, 10)
    (10, 2, 1)
    """
    if epoch_s <= 0 or not math.isfinite(epoch_s):
        return min_epochs if not math.isfinite(epoch_s) else max_epochs
    return max(min_epochs, min(max_epochs, math.floor(budget_s / epoch_s)))


@dataclass(frozen=True)
class BudgetEpochsPlanner:
    """Wraps a planner and sets each plan's local epochs from a compute-time budget.

    Attributes:
        base: the planner that decides batch, learning rate and the rest.
        predictor: predicts the compute time of a plan on a device.
        budget_s: virtual compute seconds a task may take.
        min_epochs: the fewest epochs any device trains.
        max_epochs: the most epochs any device trains.
    """

    base: Planner
    predictor: TaskPredictor
    budget_s: float
    min_epochs: int = 1
    max_epochs: int = 10

    def plan(self, device_id: int, round_: int, profile: DeviceProfile, state: DeviceState) -> TrainPlan:
        plan = self.base.plan(device_id, round_, profile, state)
        one = dataclasses.replace(plan, local_epochs=1, max_steps=None)
        epoch_s = self.predictor.cost(one, profile, state).compute_s
        epochs = epochs_for_budget(epoch_s, self.budget_s, self.min_epochs, self.max_epochs)
        return dataclasses.replace(plan, local_epochs=epochs)
