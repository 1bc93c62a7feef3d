"""Predicting a task's cost before dispatch: what selection and local-work planning consult.

A :class:`TaskPredictor` binds the measured model, the memory model, each device's data size
and the payload size, and answers "what would this plan cost on this device in this state?"
with the same arithmetic the simulated fleet uses (:func:`fedfit.cost.time.task_cost`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fedfit.cost.memory import MemoryModel
from fedfit.cost.profile import ModelCost
from fedfit.cost.techniques import max_plan_micro_batch
from fedfit.cost.time import task_cost
from fedfit.types import DeviceProfile, DeviceState, TaskCost, TrainPlan


@dataclass(frozen=True)
class TaskPredictor:
    """Predicted cost and affordable batch of a plan on a device.

    Attributes:
        costs: measured model cost per width.
        memory: the memory model.
        num_examples: local training-set size per device id.
        payload_bytes: bytes sent each way per task; ``None``: the plan's sub-model at its width
            (what the sub-model exchange sends).
    """

    costs: Callable[[float], ModelCost]
    memory: MemoryModel
    num_examples: Sequence[int]
    payload_bytes: int | None = None

    def cost(self, plan: TrainPlan, profile: DeviceProfile, state: DeviceState) -> TaskCost:
        """The modelled :class:`TaskCost` of ``plan`` on the device in ``state``."""
        cost = self.costs(plan.width)
        size = cost.param_bytes if self.payload_bytes is None else self.payload_bytes
        return task_cost(plan=plan, profile=profile, state=state, cost=cost, memory=self.memory,
                         num_examples=self.num_examples[plan.device_id], bytes_down=size, bytes_up=size)

    def affordable_batch(self, plan: TrainPlan, profile: DeviceProfile, state: DeviceState) -> int:
        """Largest micro-batch whose peak, with the plan's techniques, fits the reported free
        memory (0: none fits)."""
        memory = self.memory.for_device(profile)
        return max_plan_micro_batch(memory, self.costs(plan.width), plan.techniques, state.free_memory_bytes)
