"""Per-epoch re-planning of a simulated task (the device side of dynamic batching).

A device with an :class:`EpochAdapter` takes a snapshot of its state at the virtual start of
every local epoch and re-decides its micro-batch and accumulation, so it reacts when memory,
battery or heat change mid-task. :func:`schedule_epochs` walks the epochs on the virtual clock
and returns the plan actually run (``TrainPlan.epoch_batches``), its summed cost, and whether
the device declined at the start (HOT, no memory) or ran out of memory at an epoch. A decline
at a later epoch pauses training: the epochs done so far are uploaded.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Protocol

from fedfit.cost.time import local_work
from fedfit.policy.batching import BatchDecision
from fedfit.types import DeviceProfile, DeviceState, TaskCost, TrainPlan


class EpochAdapter(Protocol):
    """Device-side batch decision at the start of a local epoch."""

    def adapt(self, plan: TrainPlan, profile: DeviceProfile, state: DeviceState, epoch: int) -> BatchDecision:
        """The decision for epoch ``epoch`` of ``plan`` given the device's state now."""
        ...


#: The device's state at virtual time ``t`` after ``extra_j`` joules spent in this task.
Snapshot = Callable[[float, float], DeviceState]
#: The modelled cost of a plan in a state.
CostOf = Callable[[TrainPlan, DeviceState], TaskCost]


@dataclasses.dataclass(frozen=True, slots=True)
class EpochSchedule:
    """The outcome of walking a task's epochs.

    Attributes:
        plan: the plan as run, with ``epoch_batches`` (one entry per epoch run).
        cost: summed cost (peak = the largest epoch peak).
        declined: the reason the device declined at the first epoch; ``None`` otherwise.
        out_of_memory: (virtual time, detail) of the epoch whose peak exceeded free memory.
    """

    plan: TrainPlan
    cost: TaskCost
    declined: str | None = None
    out_of_memory: tuple[float, str] | None = None


def _epoch_plan(plan: TrainPlan, d: BatchDecision, steps_left: int | None) -> TrainPlan:
    return dataclasses.replace(plan, micro_batch=d.micro_batch, accumulation_steps=d.accumulation_steps,
                               local_epochs=1, max_steps=steps_left, epoch_batches=())


def schedule_epochs(plan: TrainPlan, profile: DeviceProfile, num_examples: int, *, now_s: float,
                    snapshot: Snapshot, cost_of: CostOf, adapter: EpochAdapter) -> EpochSchedule:
    """Re-plan ``plan`` at every epoch's virtual start and sum the epochs' costs.

    Args:
        plan: the server's plan (its ``local_epochs`` and ``max_steps`` bound the work).
        profile: the device's profile.
        num_examples: the device's local training-set size.
        now_s: dispatch time; the first epoch starts after the download.
        snapshot: the device's state at a time, after energy spent so far in this task.
        cost_of: modelled cost of a plan in a state.
        adapter: the device's per-epoch policy.
    """
    first = cost_of(plan, snapshot(now_s, 0.0))
    t, spent = now_s + first.download_s, profile.radio_power_w * _finite(first.download_s)
    steps_left, batches, epoch_costs = plan.max_steps, [], []
    for epoch in range(plan.local_epochs):
        state = snapshot(t, spent)
        d = adapter.adapt(plan, profile, state, epoch)
        if d.declined:
            if epoch == 0:
                return EpochSchedule(plan, dataclasses.replace(first, energy_j=0.0), declined=d.reason)
            break  # paused mid-task: upload what is done
        c = cost_of(_epoch_plan(plan, d, steps_left), state)
        if c.peak_memory_bytes > state.free_memory_bytes:
            detail = f"epoch {epoch}: peak {c.peak_memory_bytes} B > free {state.free_memory_bytes} B"
            return EpochSchedule(plan, first, out_of_memory=(t, detail))
        batches.append((d.micro_batch, d.accumulation_steps))
        epoch_costs.append(c)
        t, spent = t + c.compute_s, spent + profile.compute_power_w * c.compute_s
        if steps_left is not None:
            steps_left -= local_work(_epoch_plan(plan, d, steps_left), num_examples)[0]
            if steps_left <= 0:
                break
    return EpochSchedule(_ran(plan, batches), _summed(first, epoch_costs, profile))


def _finite(seconds: float) -> float:
    return seconds if math.isfinite(seconds) else 0.0


def _ran(plan: TrainPlan, batches: list[tuple[int, int]]) -> TrainPlan:
    micro, accumulation = batches[0]
    return dataclasses.replace(plan, micro_batch=micro, accumulation_steps=accumulation,
                               local_epochs=len(batches), epoch_batches=tuple(batches))


def _summed(first: TaskCost, epochs: list[TaskCost], profile: DeviceProfile) -> TaskCost:
    compute_s = sum(c.compute_s for c in epochs)
    radio_s = _finite(first.download_s) + _finite(first.upload_s)
    return dataclasses.replace(
        first, compute_s=compute_s, flops=sum(c.flops for c in epochs),
        peak_memory_bytes=max(c.peak_memory_bytes for c in epochs),
        energy_j=profile.compute_power_w * compute_s + profile.radio_power_w * radio_s)
