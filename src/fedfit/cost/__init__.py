"""Cost model: measured model costs, peak memory, time and energy on the virtual clock."""

from fedfit.cost.memory import MemoryModel
from fedfit.cost.predictor import TaskPredictor
from fedfit.cost.profile import ModelCost, measure
from fedfit.cost.time import THERMAL_FACTOR, compute_time_s, local_work, task_cost, transfer_time_s

__all__ = [
    "THERMAL_FACTOR",
    "MemoryModel",
    "ModelCost",
    "TaskPredictor",
    "compute_time_s",
    "local_work",
    "measure",
    "task_cost",
    "transfer_time_s",
]
