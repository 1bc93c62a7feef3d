"""The server's batch suggestion from a device's history: initial assignment, then runtime feedback.

Seed 000's loop has two server-side steps the batch policy alone does not take: an *initial
assignment* from the static profile, before the device has run anything, and *runtime
feedback*, where later suggestions follow what the device reported. :func:`batch_from_history`
adjusts the micro-batch a planner wrote from the device's last reported state:

* no result recorded yet: the registry's profile-only suggestion
  (:meth:`~fedfit.devices.Registry.suggest_batch`), when one was stored, as long as its current
  state affords it (a device throttled by heat or a low battery when it could first be invited
  would otherwise report less than the suggestion and be deferred until it ran once: never);
* last task ran out of memory: half the batch it was last known to run (its reported batch, or
  the suggestion), once more per failure in a row, never below 1 — the memory model
  under-predicted for this device, so its own outcome wins over the prediction;
* last task returned an update: the micro-batch the device reported using
  (:meth:`~fedfit.devices.Registry.record_batch`), as long as its current state affords it.

The device still adapts at every epoch from its own monitor (dynamic batching), so this is the
server's suggestion: it decides readiness (the planned batch deferral compares with), the
predicted task time, and the first epoch of a device that adapts nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from fedfit.devices.registry import DeviceHistory
from fedfit.policy.planning import Planner
from fedfit.types import DeviceProfile, DeviceState, FailureCause, TrainPlan


def batch_from_history(planned: int, history: DeviceHistory) -> int:
    """The micro-batch to suggest, given the ``planned`` one and the device's history.

    >>> batch_from_history(32, DeviceHistory(suggested_batch=16))
    16
    >>> batch_from_history(2, DeviceHistory(suggested_batch=4))  # hot now: affords 2 of the profile's 4
    2
    >>> batch_from_history(32, DeviceHistory(tasks=1, completions=1, last_batch=(8, 4)))
    8
    >>> batch_from_history(32, DeviceHistory(tasks=2, failure_streak=2, last_cause="out_of_memory",
    ...                                      last_batch=(16, 2)))
    4
    """
    if history.tasks == 0:
        return min(planned, history.suggested_batch or planned)
    known = history.last_batch[0] if history.last_batch else history.suggested_batch or planned
    if history.last_cause == FailureCause.OUT_OF_MEMORY.value:
        return max(1, min(planned, known) >> history.failure_streak)
    if history.last_cause is None and history.last_batch is not None:
        return max(1, min(planned, history.last_batch[0]))
    return planned


@dataclass(frozen=True)
class HistoryPlanner:
    """Wraps a planner; the micro-batch follows :func:`batch_from_history` (implements
    :class:`~fedfit.policy.Planner`).

    Attributes:
        base: the planner whose plan is adjusted (dynamic batching).
        history: a device's history (``Registry.history``).
    """

    base: Planner
    history: Callable[[int], DeviceHistory]

    def plan(self, device_id: int, round_: int, profile: DeviceProfile, state: DeviceState) -> TrainPlan:
        plan = self.base.plan(device_id, round_, profile, state)
        micro = batch_from_history(plan.micro_batch, self.history(device_id))
        if micro == plan.micro_batch:
            return plan
        return dataclasses.replace(plan, micro_batch=micro)
