"""The dynamic-batching planner: server suggestion, device adaptation and readiness.

:class:`DynamicBatchPlanner` plays both sides of seed 000's closed loop with the one pure
policy :func:`~fedfit.policy.batching.decide_batch`:

* server side, :meth:`~DynamicBatchPlanner.plan` writes the initial suggestion from the
  device's profile and last reported state (micro-batch, accumulation, local epochs, step cap);
* device side, :meth:`~DynamicBatchPlanner.adapt` is re-run by the device at the start of every
  local epoch from its own monitor's state: it lowers (or raises) the micro-batch, or pauses;
* :meth:`~DynamicBatchPlanner.readiness` answers the server's readiness query — the
  micro-batch the device can afford now (0 when it would decline).

Every decision is taken for the sub-model the device trains: the device adapts, and answers
the readiness query, at its plan's width (a 384 KiB sensor cannot hold one sample of the
master but several of its quarter-width sub-model). The server's first suggestion is written
before a width planner sets the width, so it is for the master.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fedfit.cost.memory import MemoryModel
from fedfit.cost.profile import ModelCost
from fedfit.policy.batching import BatchDecision, BatchingRules, decide_batch, initial_batch
from fedfit.types import DeviceProfile, DeviceState, TrainPlan


@dataclass(frozen=True)
class DynamicBatchPlanner:
    """Plans each task with the batch policy (implements :class:`~fedfit.policy.Planner`).

    Args:
        rules: the policy's parameters.
        costs: the measured model at a width relative to the master (``costs(width)``).
        memory: the memory model.
        num_examples: local training-set size of each device, by device id.
        local_epochs: local epochs of a device with nothing holding it back.
        lr: learning rate.
        max_steps: cap on optimiser steps (``None``: none).
        deadline_s: round deadline copied into each plan.
    """

    rules: BatchingRules
    costs: Callable[[float], ModelCost]
    memory: MemoryModel
    num_examples: Sequence[int]
    local_epochs: int = 1
    lr: float = 0.05
    max_steps: int | None = None
    deadline_s: float | None = None

    def decide(self, profile: DeviceProfile, state: DeviceState, width: float = 1.0) -> BatchDecision:
        """The policy's decision for a device in ``state`` training the sub-model at ``width``."""
        return decide_batch(profile, state, self.costs(width), self.memory, self.rules)

    def plan(self, device_id: int, round_: int, profile: DeviceProfile, state: DeviceState) -> TrainPlan:
        d = self.decide(profile, state)
        if d.declined:  # suggest the profile's batch; the device declines on its own
            micro = max(1, initial_batch(profile, self.costs(1.0), self.memory, self.rules))
            return TrainPlan(device_id=device_id, round=round_, micro_batch=micro, local_epochs=self.local_epochs,
                             max_steps=self.max_steps, lr=self.lr, deadline_s=self.deadline_s, bound_by=d.bound_by)
        epochs = self.local_epochs * d.epochs_scale
        return TrainPlan(device_id=device_id, round=round_, micro_batch=d.micro_batch,
                         accumulation_steps=d.accumulation_steps, local_epochs=epochs,
                         max_steps=self._max_steps(device_id, d.effective_batch, epochs, d.work_fraction),
                         lr=self.lr, deadline_s=self.deadline_s, bound_by=d.bound_by)

    def _max_steps(self, device_id: int, effective: int, epochs: int, fraction: float) -> int | None:
        if fraction >= 1.0:
            return self.max_steps
        full = math.ceil(self.num_examples[device_id] / effective) * epochs
        reduced = max(1, math.ceil(full * fraction))
        return reduced if self.max_steps is None else min(reduced, self.max_steps)

    def adapt(self, plan: TrainPlan, profile: DeviceProfile, state: DeviceState, epoch: int) -> BatchDecision:
        """The device's own decision at the start of local epoch ``epoch`` (``plan`` is the
        server's suggestion; the micro-batch follows the device's state now, at the plan's width)."""
        return self.decide(profile, state, plan.width)

    def readiness(self, profile: DeviceProfile, state: DeviceState, width: float = 1.0) -> int:
        """The micro-batch the device can afford now for the sub-model at ``width``; 0 when it
        would decline or cannot be reached (an offline device does not answer the query)."""
        if not state.online:
            return 0
        d = self.decide(profile, state, width)
        return 0 if d.declined else d.micro_batch
