"""Training energy taken from a device's battery: a trace's state after what fedfit spent.

>>> import dataclasses
>>> from fedfit.devices.catalogue import tier
>>> from fedfit.types import Link, Thermal
>>> phone = dataclasses.replace(tier("midrange_phone"), battery_capacity_j=1000.0)
>>> state = DeviceState(2**30, 0.5, False, 30.0, Thermal.NOMINAL, Link.WIFI, 1e7, True)
>>> with_consumption(state, phone, 100.0).battery_fraction
0.4
"""

from __future__ import annotations

import math

from fedfit.types import DeviceProfile, DeviceState


def with_consumption(state: DeviceState, profile: DeviceProfile, consumed_j: float) -> DeviceState:
    """``state`` with ``consumed_j`` joules of training energy taken from the battery.

    The battery fraction drops by ``consumed_j / battery_capacity_j`` (not below 0); an empty
    battery takes the device offline. Mains-powered devices and unknown levels are unchanged.

    Args:
        state: the state before consumption.
        profile: the device's profile (for its battery capacity).
        consumed_j: energy drawn by training that the trace does not know about, in joules;
            the caller decides its window (e.g. since the last charge).

    Raises:
        ValueError: ``consumed_j`` is negative or not finite.
    """
    if not math.isfinite(consumed_j) or consumed_j < 0:
        raise ValueError(f"consumed_j must be finite and >= 0, got {consumed_j!r}")
    capacity = profile.battery_capacity_j
    if consumed_j == 0 or capacity is None or state.battery_fraction is None:
        return state
    level = max(0.0, state.battery_fraction - consumed_j / capacity)
    # positionally, in DeviceState's field order: a check-in makes one per device that trained
    # before, and ``dataclasses.replace`` costs 2.5 times as much
    return DeviceState(state.free_memory_bytes, level, state.charging, state.temperature_c, state.thermal, state.link,
                       state.bandwidth_bps, state.online and level > 0, state.cpu_utilisation)
