"""Small builders shared by tests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fedfit.types import DeviceProfile, DeviceState, Link, Thermal, UtilisationCurve


def profile(**overrides: Any) -> DeviceProfile:
    base = DeviceProfile(tier="test", total_memory_bytes=2**30, training_memory_bytes=2**26,
                         flops_per_s=1e10, utilisation=UtilisationCurve(1.0, 0.0), battery_capacity_j=36000.0,
                         compute_power_w=2.0, radio_power_w=1.0, latency_s=0.05,
                         radios=(Link.WIFI,))
    return replace(base, **overrides)


def state(**overrides: Any) -> DeviceState:
    base = DeviceState(free_memory_bytes=2**26, battery_fraction=0.9, charging=False, temperature_c=30.0,
                       thermal=Thermal.NOMINAL, link=Link.WIFI, bandwidth_bps=1e7, online=True)
    return replace(base, **overrides)
