"""A round's dispatch endings judged together equal the task-by-task judgement, and hand-worked cases."""

from __future__ import annotations

import dataclasses
import random

from fedfit.devices.catalogue import TIERS, tier
from fedfit.simulation.endings import BATTERY_RESERVE, dispatch_ending, dispatch_endings
from fedfit.types import DeviceState, FailureCause, Link, TaskCost, Thermal, TrainPlan

PHONE = tier("midrange_phone")  # battery-powered
STATE = DeviceState(2**30, 0.5, False, 30.0, Thermal.NOMINAL, Link.WIFI, 4e7, True)
COST = TaskCost(download_s=2.0, compute_s=6.0, upload_s=2.0, energy_j=40.0, peak_memory_bytes=2**20,
                bytes_down=1000, bytes_up=1000, flops=1e6)


def _random_task(rng: random.Random, d: int) -> tuple[TrainPlan, object, DeviceState, TaskCost, float]:
    profile = rng.choice(list(TIERS.values()))
    fraction = rng.choice([None, float("nan"), 0.0, BATTERY_RESERVE, 1.0, rng.random()])
    free = rng.choice([2**20, 2**20 - 1, 2**20 + 1, 2**64 + 1, rng.randrange(2**18, 2**32)])
    state = DeviceState(free, fraction, rng.random() < 0.3, 30.0, Thermal.NOMINAL, Link.WIFI, 4e7, rng.random() < 0.9)
    download = rng.choice([1.0, float("inf"), float("nan"), rng.uniform(0.1, 30)])
    energy = rng.choice([1e-9, float("nan"), rng.uniform(1, 5e4)])
    peak = rng.choice([2**20, 2**64, rng.randrange(2**18, 2**32)])
    cost = dataclasses.replace(COST, download_s=download, energy_j=energy, peak_memory_bytes=peak,
                               compute_s=rng.uniform(0, 100))
    return TrainPlan(d, 3, 16), profile, state, cost, rng.uniform(0, 1e5)


def _key(ending):  # type: ignore[no-untyped-def]
    """Comparable form (a NaN time or energy equals itself here)."""
    return None if ending is None else (repr(ending[0]), ending[1], repr(ending[2]))


def test_endings_together_equal_one_by_one() -> None:
    rng = random.Random(11)
    tasks = [_random_task(rng, d) for d in range(3000)]
    plans, profiles, states, costs, now = (list(column) for column in zip(*tasks))
    together = dispatch_endings(plans, profiles, states, costs, now)
    one_by_one = [dispatch_ending(*task) for task in tasks]  # type: ignore[arg-type]
    assert [_key(e) for e in together] == [_key(e) for e in one_by_one]
    assert sum(e is None for e in together) > 300  # both kinds well represented
    assert sum(e is not None for e in together) > 300


def test_hand_worked_endings() -> None:
    plans = [TrainPlan(d, 0, 16) for d in range(6)]
    states = [STATE, dataclasses.replace(STATE, online=False), dataclasses.replace(STATE, free_memory_bytes=2**20 - 1),
              dataclasses.replace(STATE, battery_fraction=0.05 + 20.0 / PHONE.battery_capacity_j),  # 20 J left
              dataclasses.replace(STATE, battery_fraction=0.06, charging=True),
              dataclasses.replace(STATE, free_memory_bytes=2**20)]  # peak == free: fits
    ends = dispatch_endings(plans, [PHONE] * 6, states, [COST] * 6, [100.0] * 6)
    assert ends[0] is None and ends[4] is None and ends[5] is None
    assert ends[1] is not None and ends[1][:1] == (100.0,) and ends[1][1].cause is FailureCause.OFFLINE
    assert ends[2] is not None and ends[2][0] == 102.0 and ends[2][1].cause is FailureCause.OUT_OF_MEMORY
    assert ends[2][2] == PHONE.radio_power_w * 2.0
    battery = ends[3]
    assert battery is not None and battery[1].cause is FailureCause.BATTERY
    assert abs(battery[2] - 20.0) < 1e-9 and abs(battery[0] - (100.0 + 10.0 * 20.0 / 40.0)) < 1e-9


def test_no_tasks() -> None:
    assert dispatch_endings([], [], [], [], []) == []
