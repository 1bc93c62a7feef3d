"""Seeded device traces: determinism, bounds, thermal mapping, charging and consumption."""

import dataclasses

import numpy as np
import pytest

from fedfit.devices.catalogue import TIERS, tier
from fedfit.devices.generators import LINKS, OFFLINE, WIFI
from fedfit.devices.trace_params import TraceParams
from fedfit.devices.traces import (
    TRACE_ARRAYS,
    DeviceTrace,
    generate_trace,
    thermal_of,
    with_consumption,
)
from fedfit.errors import ConfigError
from fedfit.types import Link, Thermal

PARAMS = TraceParams()


def _arrays_equal(a: DeviceTrace, b: DeviceTrace) -> bool:
    for name in TRACE_ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        if (x is None) != (y is None) or (x is not None and not np.array_equal(x, y)):
            return False
    return True


@pytest.mark.parametrize("name", sorted(TIERS))
def test_same_inputs_give_identical_traces(name: str) -> None:
    first = generate_trace(TIERS[name], seed=11, device_id=4)
    second = generate_trace(TIERS[name], seed=11, device_id=4)

    assert _arrays_equal(first, second)
    assert all(first.state_at(t) == second.state_at(t) for t in (0.0, 3599.0, 90000.0))


def test_different_device_ids_give_different_traces() -> None:
    first = generate_trace(tier("midrange_phone"), seed=11, device_id=4)
    second = generate_trace(tier("midrange_phone"), seed=11, device_id=5)

    assert not np.array_equal(first.free_memory_bytes, second.free_memory_bytes)
    assert first.battery_fraction is not None and second.battery_fraction is not None
    assert not np.array_equal(first.battery_fraction, second.battery_fraction)


def test_different_seeds_give_different_traces() -> None:
    first = generate_trace(tier("midrange_phone"), seed=1, device_id=4)
    second = generate_trace(tier("midrange_phone"), seed=2, device_id=4)

    assert not _arrays_equal(first, second)


@pytest.mark.parametrize("name", sorted(TIERS))
@pytest.mark.parametrize("device_id", [0, 1, 2])
def test_trace_values_stay_in_bounds(name: str, device_id: int) -> None:
    profile = TIERS[name]

    trace = generate_trace(profile, seed=3, device_id=device_id)

    assert trace.n_steps == 172800 / 60
    assert np.all(trace.free_memory_bytes >= 0)
    assert np.all(trace.free_memory_bytes <= profile.training_memory_bytes)
    offline = trace.link == OFFLINE
    assert np.array_equal(trace.bandwidth_bps == 0.0, offline)
    assert not np.any(trace.online & offline)
    assert np.all((trace.cpu_utilisation >= 0) & (trace.cpu_utilisation <= 1))
    allowed = [LINKS.index(link) for link in (*profile.radios, Link.OFFLINE)]
    assert np.all(np.isin(trace.link, allowed))
    if profile.battery_capacity_j is None:
        assert trace.battery_fraction is None and trace.charging is None
    else:
        assert trace.battery_fraction is not None
        assert np.all((trace.battery_fraction >= 0) & (trace.battery_fraction <= 1))
        assert not np.any(trace.online & (trace.battery_fraction == 0))


def test_mains_device_reports_no_battery() -> None:
    state = generate_trace(tier("vehicle_computer"), seed=0, device_id=0).state_at(1000.0)

    assert state.battery_fraction is None and state.charging is None


def test_app_pressure_leaves_most_memory_free_on_average() -> None:
    profile = tier("flagship_phone")
    traces = [generate_trace(profile, seed=0, device_id=i) for i in range(20)]
    free = np.concatenate([t.free_memory_bytes for t in traces])

    taken = 1.0 - free / profile.training_memory_bytes

    # Defaults: 4 apps, each running 20 / (20 + 50) of the time with a mean share of 0.135.
    assert taken.mean() == pytest.approx(4 * 20 / 70 * 0.135, abs=0.03)
    assert np.mean(taken >= 0.4) < 0.15


def test_sensor_stays_on_low_band_cellular() -> None:
    trace = generate_trace(tier("sensor_mcu"), seed=0, device_id=9)

    on_air = trace.link != OFFLINE
    assert np.all(trace.link[on_air] == LINKS.index(Link.CELLULAR))
    assert np.all((trace.bandwidth_bps[on_air] >= 20e3) & (trace.bandwidth_bps[on_air] <= 80e3))


def test_vehicle_gets_depot_wifi_at_night_and_cellular_on_the_road() -> None:
    trace = generate_trace(tier("vehicle_computer"), seed=0, device_id=2)

    hours = (np.arange(trace.n_steps) * 60.0 / 3600.0) % 24
    noon = (hours >= 11) & (hours < 13)
    assert np.all(trace.link[noon] != WIFI)
    assert np.any(trace.link == WIFI) and np.any(trace.link == LINKS.index(Link.CELLULAR))


@pytest.mark.parametrize(
    ("temperature_c", "expected"),
    [
        (None, Thermal.UNKNOWN),
        (20.0, Thermal.NOMINAL),
        (37.99, Thermal.NOMINAL),
        (38.0, Thermal.WARM),
        (42.99, Thermal.WARM),
        (43.0, Thermal.HOT),
        (60.0, Thermal.HOT),
    ],
)
def test_thermal_thresholds(temperature_c: float | None, expected: Thermal) -> None:
    assert thermal_of(temperature_c, PARAMS) is expected


def test_trace_states_map_temperature_to_thermal() -> None:
    trace = generate_trace(tier("smartwatch"), seed=0, device_id=1)

    states = [trace.state_at(i * 60.0) for i in range(0, trace.n_steps, 7)]

    assert all(s.thermal is thermal_of(s.temperature_c, PARAMS) for s in states)
    assert {s.thermal for s in states} >= {Thermal.NOMINAL, Thermal.WARM}


def _charging_run(length: int) -> tuple[DeviceTrace, int]:
    """A flagship trace and a step that starts ``length`` charging steps below 0.4 charge."""
    for device_id in range(200):
        trace = generate_trace(tier("flagship_phone"), seed=0, device_id=device_id)
        assert trace.charging is not None and trace.battery_fraction is not None
        for i in range(trace.n_steps - length):
            if trace.battery_fraction[i] < 0.4 and trace.charging[i : i + length].all():
                return trace, i
    raise AssertionError("no charging window found")


def test_charging_raises_the_battery_at_the_tier_rate() -> None:
    trace, i = _charging_run(30)
    assert trace.battery_fraction is not None

    rise = trace.battery_fraction[i + 30] - trace.battery_fraction[i]

    # 30 one-minute steps at 0.7 of a charge per hour, below the 0.8 taper: 0.35.
    assert rise == pytest.approx(30 * 0.7 / 60)
    assert trace.state_at(i * 60.0).charging is True


def test_battery_never_rises_while_not_charging() -> None:
    trace = generate_trace(tier("older_phone"), seed=0, device_id=3)
    assert trace.battery_fraction is not None and trace.charging is not None

    steps = np.diff(trace.battery_fraction)

    assert np.all(steps[~trace.charging[:-1]] <= 0)


def test_consumption_lowers_the_battery_by_energy_over_capacity() -> None:
    profile = tier("smartwatch")
    trace = generate_trace(profile, seed=0, device_id=0)
    before = trace.state_at(0.0)
    assert before.battery_fraction is not None and before.battery_fraction > 0.1

    after = trace.state_at(0.0, consumed_j=396.0)  # a tenth of 3960 J

    assert after.battery_fraction == pytest.approx(before.battery_fraction - 0.1)
    assert dataclasses.replace(after, battery_fraction=before.battery_fraction) == before


def test_consumption_beyond_the_charge_empties_the_battery_and_takes_the_device_offline() -> None:
    profile = tier("smartwatch")
    state = generate_trace(profile, seed=0, device_id=0).state_at(0.0)

    drained = with_consumption(state, profile, consumed_j=1e9)

    assert drained.battery_fraction == 0.0 and drained.online is False


def test_consumption_leaves_mains_devices_unchanged() -> None:
    profile = tier("vehicle_computer")
    state = generate_trace(profile, seed=0, device_id=0).state_at(0.0)

    assert with_consumption(state, profile, consumed_j=1e6) == state


def test_state_is_piecewise_constant_and_wraps_past_the_horizon() -> None:
    trace = generate_trace(tier("tablet"), seed=0, device_id=0, horizon_s=3600.0)

    assert trace.state_at(60.0) == trace.state_at(119.9)
    assert trace.state_at(3600.0 + 125.0) == trace.state_at(125.0)
    assert trace.horizon_s == 3600.0


def test_negative_time_is_rejected() -> None:
    trace = generate_trace(tier("tablet"), seed=0, device_id=0, horizon_s=600.0)

    with pytest.raises(ValueError):
        trace.state_at(-1.0)


def test_trace_arrays_are_read_only() -> None:
    trace = generate_trace(tier("tablet"), seed=0, device_id=0, horizon_s=600.0)

    with pytest.raises(ValueError):
        trace.free_memory_bytes[0] = 0


def test_bad_trace_params_name_the_field() -> None:
    with pytest.raises(ConfigError, match=r"^trace\.hot_c|^trace\.warm_c"):
        TraceParams(warm_c=45.0, hot_c=40.0)
