"""Whether tasks in flight lose their device mid-task, checked for many tasks at once.

A task that passed its checks at dispatch can still fail if its device goes offline before it
ends: the fleet (:class:`~fedfit.simulation.fleet.SimulatedFleet`) looks every ``step_s`` from
the start and at the end. Asked task by task that is a lazy state per device per look; here
every task's next look is asked of the traces together (one batched call per look), in the same
order of looks, so each answer is the one the task-by-task check gives.

>>> online = lambda devices, times: [t < 100.0 for t in times]
>>> offline_during_many(online, [(0, 0.0, 30.0), (1, 0.0, 150.0)], step_s=60.0)
[None, 120.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from fedfit.types import DeviceProfile, DeviceState, Failure, FailureCause, Params, TaskCost, TrainPlan

#: How a task ends: (finish time, failure or ``None``, energy spent).
Ending = tuple[float, Failure | None, float]


class Dispatched(NamedTuple):
    """A task the fleet dispatched and has not finished yet: its mid-task check is pending
    (``ending`` ``None``), or its ending is known and it waits for its turn (dispatch order).
    A named tuple: a round makes one per invited device, and a tuple is built ~4x faster than a
    frozen dataclass."""

    plan: TrainPlan
    profile: DeviceProfile
    state: DeviceState
    cost: TaskCost
    params: Params
    now_s: float
    ending: Ending | None


def after_check(plan: TrainPlan, cost: TaskCost, now_s: float, offline_at: float | None) -> Ending:
    """How a task dispatched at ``now_s`` that passed its dispatch checks ends, given when its
    device went offline (``None``: it stayed online)."""
    if offline_at is not None:
        share = (offline_at - now_s) / max(cost.duration_s, 1e-9)
        detail = "went offline mid-task"
        return offline_at, Failure(plan.device_id, plan.round, FailureCause.OFFLINE, detail), cost.energy_j * share
    return now_s + cost.duration_s, None, cost.energy_j


#: ``online(devices, times)``: whether each device is online at its time.
OnlineOf = Callable[[list[int], list[float]], list[bool]]


def offline_during_many(online: OnlineOf, tasks: Sequence[tuple[int, float, float]],
                        step_s: float = 60.0) -> list[float | None]:
    """For each ``(device, start_s, end_s)``, the first look at which the device is offline
    (every ``step_s`` after the start, then the end), or ``None`` if it stays online."""
    found: list[float | None] = [None] * len(tasks)
    if not tasks:
        return found
    devices, starts, ends = (np.array(column) for column in zip(*tasks))
    rows = np.arange(len(tasks))
    looks = starts + step_s  # each look step_s after the last, added one step at a time as floats
    while len(rows):  # one call per look, for every task still looking (in C: a round looks at ≈ 700)
        times = np.minimum(looks, ends[rows])  # the end, once the looks pass it
        answers = np.array(online(devices[rows].tolist(), times.tolist()), dtype=np.bool_)
        for i, t in zip(rows[~answers].tolist(), times[~answers].tolist()):
            found[i] = t
        going = answers & (looks < ends[rows])  # online, and the end not looked at yet
        rows, looks = rows[going], looks[going] + step_s
    return found
