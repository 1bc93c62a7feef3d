"""How a dispatched task ends, decided at dispatch from its modelled cost and its device's state.

Offline (unreachable, or no link), out of memory (peak bytes above free memory), battery (the
task's energy exceeds the charge left above :data:`BATTERY_RESERVE`), or ``None``: it passed
the dispatch checks and ends as the mid-task offline check says
(:func:`fedfit.simulation.online_checks.after_check`). Pure functions of their arguments.

:func:`dispatch_endings` judges a round's tasks together: the tasks that pass every dispatch
check (most of them) are found by array comparisons, and only the others are judged one by one
by :func:`dispatch_ending`, which builds their failures; so each ending is ``dispatch_ending``'s.

>>> from fedfit.devices.catalogue import tier
>>> from fedfit.types import DeviceState, Link, TaskCost, Thermal, TrainPlan
>>> watch = tier("smartwatch")
>>> up = DeviceState(2**30, 0.5, False, 30.0, Thermal.NOMINAL, Link.WIFI, 4e7, True)
>>> down = dataclasses.replace(up, online=False)
>>> cost = TaskCost(1.0, 2.0, 1.0, 3.0, 2**20, 10, 10, 5.0)
>>> plans = [TrainPlan(0, 0, 16), TrainPlan(1, 0, 16)]
>>> ends = dispatch_endings(plans, [watch, watch], [up, down], [cost, cost], [0.0, 0.0])
>>> ends[0] is None, ends[1][1].cause.value
(True, 'offline')
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from operator import attrgetter

import numpy as np

from fedfit.bulk import build_many
from fedfit.simulation.adaptive import EpochSchedule
from fedfit.simulation.online_checks import Ending
from fedfit.types import DeviceProfile, DeviceState, Failure, FailureCause, TaskCost, TrainPlan

#: Battery share a device keeps for its user; training never drains below it.
BATTERY_RESERVE = 0.05
#: The detail of a task whose device is offline (or its link down) at dispatch.
UNREACHABLE = "unreachable at dispatch"


def adapted_ending(schedule: EpochSchedule, profile: DeviceProfile, state: DeviceState, now_s: float) -> Ending | None:
    """:func:`dispatch_ending` of a device that re-plans every epoch: it may have declined, or
    an epoch's peak may exceed its free memory then."""
    plan, cost = schedule.plan, schedule.cost
    if schedule.declined is not None:
        return now_s, Failure(plan.device_id, plan.round, FailureCause.DECLINED, schedule.declined), 0.0
    if schedule.out_of_memory is not None:
        at_s, detail = schedule.out_of_memory
        spent = profile.radio_power_w * cost.download_s
        return at_s, Failure(plan.device_id, plan.round, FailureCause.OUT_OF_MEMORY, detail), spent
    return dispatch_ending(plan, profile, state, cost, now_s, memory_checked=True)


def dispatch_ending(plan: TrainPlan, profile: DeviceProfile, state: DeviceState, cost: TaskCost, now_s: float,
                    memory_checked: bool = False) -> Ending | None:
    """(finish time, failure or None, energy spent) of a task that fails at dispatch; ``None``:
    it ends as the mid-task offline check says."""
    def fail(cause: FailureCause, at_s: float, detail: str, spent: float) -> Ending:
        return at_s, Failure(plan.device_id, plan.round, cause, detail), spent

    if not state.online or not math.isfinite(cost.download_s):
        return fail(FailureCause.OFFLINE, now_s, UNREACHABLE, 0.0)
    download_j = profile.radio_power_w * cost.download_s
    if not memory_checked and cost.peak_memory_bytes > state.free_memory_bytes:
        detail = f"peak {cost.peak_memory_bytes} B > free {state.free_memory_bytes} B"
        return fail(FailureCause.OUT_OF_MEMORY, now_s + cost.download_s, detail, download_j)
    battery_end = _battery_exhausted_at(profile, state, cost, now_s)
    if battery_end is not None:
        return fail(FailureCause.BATTERY, battery_end[0], "battery at reserve", battery_end[1])
    return None


def dispatch_endings(plans: Sequence[TrainPlan], profiles: Sequence[DeviceProfile], states: Sequence[DeviceState],
                     costs: Sequence[TaskCost], now_s: Sequence[float]) -> list[Ending | None]:
    """:func:`dispatch_ending` of each task. A task passes when its device is online, its
    download finite, its peak below the free memory (compared as floats: a peak whose float is
    below the free memory's is below it) and its energy within the battery left above the
    reserve (or the device has no battery to watch); every other task is judged one by one."""
    n = len(plans)
    online = np.fromiter(map(attrgetter("online"), states), bool, n)  # C-level reads: a round judges ~1,000
    download = np.fromiter(map(attrgetter("download_s"), costs), np.float64, n)
    fits = np.fromiter(map(attrgetter("peak_memory_bytes"), costs), np.float64, n) < \
        np.fromiter(map(attrgetter("free_memory_bytes"), states), np.float64, n)
    watched = np.fromiter((p.battery_capacity_j is not None and s.battery_fraction is not None and not s.charging
                           for p, s in zip(profiles, states)), bool, n)
    reachable = online & np.isfinite(download)
    passed = reachable & fits
    if watched.any():
        rows = np.flatnonzero(watched).tolist()
        fraction = np.array([states[i].battery_fraction for i in rows], dtype=np.float64)
        capacity = np.array([profiles[i].battery_capacity_j for i in rows], dtype=np.float64)
        energy = np.array([costs[i].energy_j for i in rows], dtype=np.float64)
        passed[rows] &= energy <= (fraction - BATTERY_RESERVE) * capacity  # _battery_exhausted_at's test
    endings: list[Ending | None] = [None] * n
    unreachable = np.flatnonzero(~reachable).tolist()  # dispatch_ending's first ending, its failures built together
    lost = build_many(Failure, len(unreachable), {"device_id": [plans[i].device_id for i in unreachable],
                                                   "round": [plans[i].round for i in unreachable]},
                      {"cause": FailureCause.OFFLINE, "detail": UNREACHABLE})
    for i, failure in zip(unreachable, lost):
        endings[i] = now_s[i], failure, 0.0
    for i in np.flatnonzero(reachable & ~passed).tolist():
        endings[i] = dispatch_ending(plans[i], profiles[i], states[i], costs[i], now_s[i])
    return endings


def _battery_exhausted_at(profile: DeviceProfile, state: DeviceState, cost: TaskCost,
                          now_s: float) -> tuple[float, float] | None:
    if profile.battery_capacity_j is None or state.battery_fraction is None or state.charging:
        return None
    available_j = (state.battery_fraction - BATTERY_RESERVE) * profile.battery_capacity_j
    if cost.energy_j <= available_j:
        return None
    available_j = max(0.0, available_j)
    return now_s + cost.duration_s * available_j / cost.energy_j, available_j
