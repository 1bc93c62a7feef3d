"""The dynamic-batching planner: server suggestion, device adaptation and readiness.

:class:`DynamicBatchPlanner` plays both sides of seed 000's closed loop with the one pure
policy :func:`~fedfit.policy.batching.decide_batch`:

* server side, :meth:`~DynamicBatchPlanner.plan` writes the initial suggestion from the
  device's profile and last reported state (micro-batch, accumulation, local epochs, step cap);
* device side, :meth:`~DynamicBatchPlanner.adapt` is re-run by the device at the start of every
  local epoch from its own monitor's state: it lowers (or raises) the micro-batch, or pauses;
* :meth:`~DynamicBatchPlanner.readiness` answers the server's readiness query — the
  micro-batch the device can afford now (0 when it would decline);
* :meth:`~DynamicBatchPlanner.refit` re-decides a plan's batch once a memory technique is on
  it (the memory planner calls it): every decision is taken with the plan's techniques, so
  checkpointing, pruning, partial or selective training that lowers the peak lets the batch grow.

Every decision is taken for the sub-model the device trains: the device adapts, and answers
the readiness query, at its plan's width (a 384 KiB sensor cannot hold one sample of the
master but several of its quarter-width sub-model). The server's first suggestion is written
before a width planner sets the width, so it is for the master.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fedfit.cost.memory import MemoryModel
from fedfit.cost.profile import ModelCost
from fedfit.policy.batching import BatchDecision, BatchingRules, decide_batch, initial_batch
from fedfit.types import DeviceProfile, DeviceState, Techniques, TrainPlan


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

    def decide(self, profile: DeviceProfile, state: DeviceState, width: float = 1.0,
               techniques: Techniques = Techniques()) -> BatchDecision:
        """The policy's decision for a device in ``state`` training the sub-model at ``width``
        with ``techniques`` (which set the peak per micro-batch)."""
        return decide_batch(profile, state, self.costs(width), self.memory, self.rules, techniques)

    def plan(self, device_id: int, round_: int, profile: DeviceProfile, state: DeviceState) -> TrainPlan:
        d = self.decide(profile, state)
        if d.declined:  # suggest the profile's batch; the device declines on its own
            micro = max(1, initial_batch(profile, self.costs(1.0), self.memory, self.rules))
            return TrainPlan(device_id=device_id, round=round_, micro_batch=micro, local_epochs=self.local_epochs,
                             max_steps=self.max_steps, lr=self.lr, deadline_s=self.deadline_s, bound_by=d.bound_by)
        return self._decided(TrainPlan(device_id=device_id, round=round_, micro_batch=d.micro_batch, lr=self.lr,
                                       deadline_s=self.deadline_s), d)

    def refit(self, plan: TrainPlan, profile: DeviceProfile, state: DeviceState) -> TrainPlan | None:
        """``plan`` with the batch, accumulation and local work the policy affords for its
        techniques and width (a technique that saves memory lets the batch grow); ``None`` when
        the device would decline even with them."""
        d = self.decide(profile, state, plan.width, plan.techniques)
        return None if d.declined else self._decided(plan, d)

    def _decided(self, plan: TrainPlan, d: BatchDecision) -> TrainPlan:
        epochs = self.local_epochs * d.epochs_scale
        return dataclasses.replace(plan, micro_batch=d.micro_batch, accumulation_steps=d.accumulation_steps,
                                   local_epochs=epochs, bound_by=d.bound_by,
                                   max_steps=self._max_steps(plan.device_id, d.effective_batch, epochs,
                                                             d.work_fraction))

    def _max_steps(self, device_id: int, effective: int, epochs: int, fraction: float) -> int | None:
        if fraction >= 1.0:
            return self.max_steps
        full = math.ceil(self.num_examples[device_id] / effective) * epochs
        reduced = max(1, math.ceil(full * fraction))
        return reduced if self.max_steps is None else min(reduced, self.max_steps)

    def adapt(self, plan: TrainPlan, profile: DeviceProfile, state: DeviceState, epoch: int) -> BatchDecision:
        """The device's own decision at the start of local epoch ``epoch`` (``plan`` is the
        server's suggestion; the micro-batch follows the device's state now, at the plan's width
        and with its techniques)."""
        return self.decide(profile, state, plan.width, plan.techniques)

    def readiness(self, profile: DeviceProfile, state: DeviceState, width: float = 1.0,
                  techniques: Techniques = Techniques()) -> int:
        """The micro-batch the device can afford now for the sub-model at ``width`` with
        ``techniques``; 0 when it would decline or cannot be reached (an offline device does
        not answer the query)."""
        if not state.online:
            return 0
        d = self.decide(profile, state, width, techniques)
        return 0 if d.declined else d.micro_batch

    def plan_readiness(self, plan: TrainPlan, profile: DeviceProfile, state: DeviceState) -> int:
        """:meth:`readiness` for ``plan``'s sub-model and techniques: what its device reports."""
        return self.readiness(profile, state, plan.width, plan.techniques)
