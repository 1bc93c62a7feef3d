"""Lazy device state: determinism, no history needed, and the array generator's long-run laws."""

import math

import numpy as np
import pytest

from fedfit.devices.catalogue import TIERS, tier
from fedfit.devices.counter_rng import normal, uniform
from fedfit.devices.lazy_battery import mean_app_share
from fedfit.devices.lazy_trace import LazyTrace
from fedfit.devices.lazy_traces import LazyTraces
from fedfit.devices.trace_params import TraceParams
from fedfit.devices.traces import generate_trace, thermal_of
from fedfit.types import DeviceState, Link, Thermal

PARAMS = TraceParams()
HOURS = [h * 3600.0 for h in range(48)]


def _states(name: str, devices: int, times: list[float], seed: int = 0) -> list[DeviceState]:
    return [LazyTrace(TIERS[name], PARAMS, seed, d).state_at(t) for d in range(devices) for t in times]


def test_counter_uniforms_are_uniform_and_normals_standard() -> None:
    u = np.array([uniform(3, i, 7) for i in range(10000)])
    z = np.array([normal(3, i, 7) for i in range(10000)])

    assert u.min() >= 0.0 and u.max() < 1.0
    assert u.mean() == pytest.approx(0.5, abs=0.015) and np.mean(u < 0.1) == pytest.approx(0.1, abs=0.015)
    assert z.mean() == pytest.approx(0.0, abs=0.04) and z.std() == pytest.approx(1.0, abs=0.04)


@pytest.mark.parametrize("name", sorted(TIERS))
def test_same_inputs_give_the_same_states_in_any_order(name: str) -> None:
    times = [0.0, 59.0, 3600.0, 90000.0, 400000.0]

    forward = [LazyTrace(TIERS[name], PARAMS, 11, 4).state_at(t) for t in times]
    fresh = LazyTrace(TIERS[name], PARAMS, 11, 4)
    backward = [fresh.state_at(t) for t in reversed(times)][::-1]

    assert forward == backward


def test_state_is_constant_within_a_step() -> None:
    trace = LazyTrace(tier("flagship_phone"), PARAMS, 0, 1)

    assert trace.state_at(120.0) == trace.state_at(179.9)


def test_different_devices_and_seeds_differ() -> None:
    def path(seed: int, device: int) -> list[DeviceState]:
        return [LazyTrace(tier("midrange_phone"), PARAMS, seed, device).state_at(t) for t in HOURS]

    assert path(0, 4) != path(0, 5) and path(0, 4) != path(1, 4)


@pytest.mark.parametrize("name", sorted(TIERS))
def test_values_stay_in_bounds(name: str) -> None:
    profile = TIERS[name]
    for s in _states(name, 3, HOURS):
        assert 0 <= s.free_memory_bytes <= profile.training_memory_bytes
        assert 0.0 <= s.cpu_utilisation <= 1.0
        assert (s.bandwidth_bps == 0.0) == (s.link is Link.OFFLINE)
        assert s.link in profile.radios or s.link is Link.OFFLINE
        assert (s.battery_fraction is None) == (profile.battery_capacity_j is None)
        if s.battery_fraction is not None:
            assert 0.0 <= s.battery_fraction <= 1.0
        assert s.thermal is thermal_of(s.temperature_c, PARAMS)


def test_app_pressure_matches_the_closed_form_mean() -> None:
    profile = tier("flagship_phone")
    free = np.array([s.free_memory_bytes for s in _states("flagship_phone", 30, HOURS)])

    taken = 1.0 - free / profile.training_memory_bytes

    # Defaults: 4 apps, each running 20 / (20 + 50) of the time with a mean share of 0.135.
    assert mean_app_share(PARAMS) == pytest.approx(4 * 20 / 70 * 0.135)
    assert taken.mean() == pytest.approx(4 * 20 / 70 * 0.135, abs=0.03)
    assert np.mean(taken >= 0.4) < 0.15


def test_willing_share_follows_the_day_night_curve() -> None:
    # A vehicle is online whenever willing and on a link (~98 % of the time): night 0.95, day 0.8.
    night = [s.online for s in _states("vehicle_computer", 200, [3 * 3600.0, 27 * 3600.0])]
    day = [s.online for s in _states("vehicle_computer", 200, [15 * 3600.0, 39 * 3600.0])]

    assert np.mean(night) > np.mean(day)
    assert np.mean(day) == pytest.approx(0.8 * 0.98, abs=0.06)


def test_sensor_stays_on_low_band_cellular() -> None:
    states = _states("sensor_mcu", 5, HOURS)

    on_air = [s for s in states if s.link is not Link.OFFLINE]
    assert all(s.link is Link.CELLULAR and 20e3 <= s.bandwidth_bps <= 80e3 for s in on_air)
    # In coverage 360 of every 390 minutes on average.
    assert len(on_air) / len(states) == pytest.approx(360 / 390, abs=0.06)


def test_vehicle_gets_depot_wifi_at_night_and_cellular_on_the_road() -> None:
    noon = _states("vehicle_computer", 20, [12 * 3600.0, 36 * 3600.0])
    night = _states("vehicle_computer", 20, [1 * 3600.0, 25 * 3600.0])

    assert all(s.link is not Link.WIFI for s in noon)
    assert np.mean([s.link is Link.WIFI for s in night]) > 0.8


@pytest.mark.slow
@pytest.mark.parametrize("name", ["flagship_phone", "older_phone"])
def test_battery_laws_match_the_array_generator(name: str) -> None:
    times = [h * 3600.0 + 1800.0 for h in range(48)]
    lazy = _states(name, 16, times)
    eager = [generate_trace(TIERS[name], seed=0, device_id=d).state_at(t) for d in range(16) for t in times]

    def laws(states: list[DeviceState]) -> tuple[float, float]:
        return float(np.mean([s.battery_fraction for s in states])), float(np.mean([s.charging for s in states]))

    (lazy_level, lazy_charging), (eager_level, eager_charging) = laws(lazy), laws(eager)
    assert lazy_level == pytest.approx(eager_level, abs=0.08)
    assert lazy_charging == pytest.approx(eager_charging, abs=0.08)


def test_charging_raises_the_battery_at_the_tier_rate() -> None:
    for device in range(100):
        trace = LazyTrace(tier("flagship_phone"), PARAMS, 0, device)
        a, b = trace.state_at(86400.0 + 3600.0 * 21), trace.state_at(86400.0 + 3600.0 * 21 + 1800.0)
        assert a.battery_fraction is not None and b.battery_fraction is not None
        inside = a.charging and b.charging and all(trace.state_at(86400.0 + 3600.0 * 21 + 300.0 * i).charging
                                                   for i in range(1, 6))
        if inside and b.battery_fraction < 0.8:
            # 30 one-minute steps at 0.7 of a charge per hour, below the 0.8 taper: 0.35.
            assert b.battery_fraction - a.battery_fraction == pytest.approx(30 * 0.7 / 60)
            return
    raise AssertionError("no charging window found")


def test_battery_never_rises_while_not_charging() -> None:
    trace = LazyTrace(tier("older_phone"), PARAMS, 0, 3)
    states = [trace.state_at(60.0 * i) for i in range(6 * 60)]

    levels = [s.battery_fraction for s in states]
    assert all(x is not None for x in levels)
    rises = [after - before for before, after, s in zip(levels, levels[1:], states)  # type: ignore[operator]
             if not s.charging]
    assert max(rises) <= 0.0


def test_watch_warms_while_charging() -> None:
    states = _states("smartwatch", 10, HOURS)

    assert {s.thermal for s in states} >= {Thermal.NOMINAL, Thermal.WARM}
    warm = [s.temperature_c for s in states if s.charging]
    cool = [s.temperature_c for s in states if not s.charging]
    assert np.mean(warm) - np.mean(cool) == pytest.approx(PARAMS.charging_heat_c, abs=1.5)  # type: ignore[arg-type]


def test_mains_device_reports_no_battery() -> None:
    state = LazyTrace(tier("vehicle_computer"), PARAMS, 0, 0).state_at(1000.0)

    assert state.battery_fraction is None and state.charging is None


def test_negative_time_is_rejected() -> None:
    with pytest.raises(ValueError, match="virtual time"):
        LazyTrace(tier("tablet"), PARAMS, 0, 0).state_at(-1.0)


def test_lazy_traces_make_each_device_on_demand() -> None:
    profiles = [tier("tablet"), tier("smartwatch")] * 3
    traces = LazyTraces(profiles, PARAMS, seed=5, cache_size=2)

    assert len(traces) == 6
    assert traces[3].state_at(7200.0) == LazyTrace(tier("smartwatch"), PARAMS, 5, 3).state_at(7200.0)
    assert traces[-1].device_id == 5 and [t.device_id for t in traces[1:3]] == [1, 2]


@pytest.mark.parametrize("name", ["older_phone", "vehicle_computer", "sensor_mcu"])
def test_online_at_agrees_with_the_full_state(name: str) -> None:
    trace, fresh = LazyTrace(TIERS[name], PARAMS, 2, 9), LazyTrace(TIERS[name], PARAMS, 2, 9)

    assert [fresh.online_at(t) for t in HOURS] == [trace.state_at(t).online for t in HOURS]
