"""Resource monitors: trace-backed and psutil-backed."""

from collections import namedtuple

import psutil
import pytest

from fedfit.devices.catalogue import tier
from fedfit.devices.monitor import Monitor, PsutilMonitor, TraceMonitor
from fedfit.devices.traces import generate_trace
from fedfit.types import Link, Thermal

Battery = namedtuple("Battery", "percent secsleft power_plugged")
Temp = namedtuple("Temp", "label current high critical")
IfStats = namedtuple("IfStats", "isup duplex speed mtu flags")


@pytest.fixture
def no_sensors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(psutil, "sensors_battery", lambda: None)
    monkeypatch.setattr(psutil, "sensors_temperatures", lambda: {})


def test_both_monitors_satisfy_the_protocol() -> None:
    trace = generate_trace(tier("tablet"), seed=0, device_id=0, horizon_s=600.0)

    assert isinstance(TraceMonitor(trace), Monitor)
    assert isinstance(PsutilMonitor(), Monitor)


def test_trace_monitor_reads_the_trace_less_consumed_energy() -> None:
    profile = tier("flagship_phone")
    trace = generate_trace(profile, seed=0, device_id=0, horizon_s=3600.0)
    assert profile.battery_capacity_j is not None
    consumed_j = 0.01 * profile.battery_capacity_j

    snapshot = TraceMonitor(trace, consumed_j_fn=lambda t: consumed_j).snapshot(120.0)

    assert snapshot == trace.state_at(120.0, consumed_j)
    before = trace.state_at(120.0).battery_fraction
    assert before is not None
    assert snapshot.battery_fraction == pytest.approx(before - 0.01)


@pytest.mark.usefixtures("no_sensors")
def test_psutil_monitor_reports_free_memory_on_this_host() -> None:
    state = PsutilMonitor().snapshot(0.0)

    assert state.free_memory_bytes > 0
    assert state.cpu_utilisation is not None and 0.0 <= state.cpu_utilisation <= 1.0


@pytest.mark.usefixtures("no_sensors")
def test_psutil_monitor_caps_memory_at_the_training_budget() -> None:
    assert PsutilMonitor(training_budget_bytes=1234).snapshot(0.0).free_memory_bytes == 1234


@pytest.mark.usefixtures("no_sensors")
def test_missing_sensors_are_reported_as_unknown() -> None:
    state = PsutilMonitor().snapshot(0.0)

    assert state.battery_fraction is None and state.charging is None
    assert state.temperature_c is None and state.thermal is Thermal.UNKNOWN


def test_battery_comes_from_psutil(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(psutil, "sensors_battery", lambda: Battery(42.0, 3600, True))
    monkeypatch.setattr(psutil, "sensors_temperatures", lambda: {})

    state = PsutilMonitor().snapshot(0.0)

    assert state.battery_fraction == pytest.approx(0.42) and state.charging is True


@pytest.mark.parametrize(
    ("reading", "expected"),
    [
        (Temp("cpu", 50.0, None, None), Thermal.NOMINAL),
        (Temp("cpu", 72.0, None, None), Thermal.WARM),
        (Temp("cpu", 90.0, None, None), Thermal.HOT),
        (Temp("cpu", 60.0, 65.0, 90.0), Thermal.WARM),  # within 15 °C of the sensor's high mark
        (Temp("cpu", 66.0, 65.0, 90.0), Thermal.HOT),
    ],
)
def test_hottest_sensor_sets_temperature_and_thermal(
    monkeypatch: pytest.MonkeyPatch, reading: Temp, expected: Thermal
) -> None:
    cool = Temp("board", 30.0, None, None)
    monkeypatch.setattr(psutil, "sensors_battery", lambda: None)
    monkeypatch.setattr(psutil, "sensors_temperatures", lambda: {"a": [cool], "b": [reading]})

    state = PsutilMonitor().snapshot(0.0)

    assert state.temperature_c == reading.current and state.thermal is expected


@pytest.mark.usefixtures("no_sensors")
def test_bandwidth_is_unknown_until_a_transfer_is_recorded() -> None:
    monitor = PsutilMonitor()

    assert monitor.bandwidth_bps() == 0.0
    monitor.record_transfer(1_000_000, 2.0)
    monitor.record_transfer(3_000_000, 2.0)

    # 4 MB in 4 s = 8 Mbit/s.
    assert monitor.bandwidth_bps() == pytest.approx(8e6)


@pytest.mark.usefixtures("no_sensors")
def test_bandwidth_uses_only_the_recent_window() -> None:
    monitor = PsutilMonitor(transfer_window=1)
    monitor.record_transfer(1_000_000, 1.0)

    monitor.record_transfer(1_000, 1.0)

    assert monitor.bandwidth_bps() == pytest.approx(8e3)


@pytest.mark.usefixtures("no_sensors")
@pytest.mark.parametrize(
    ("interfaces", "link", "online"),
    [
        ({"lo": True, "wlan0": True, "rmnet0": True}, Link.WIFI, True),
        ({"lo": True, "rmnet0": True, "wlan0": False}, Link.CELLULAR, True),
        ({"lo": True, "eth0": False}, Link.OFFLINE, False),
    ],
)
def test_link_follows_the_interfaces_that_are_up(
    monkeypatch: pytest.MonkeyPatch, interfaces: dict[str, bool], link: Link, online: bool
) -> None:
    stats = {name: IfStats(up, 0, 0, 1500, "") for name, up in interfaces.items()}
    monkeypatch.setattr(psutil, "net_if_stats", lambda: stats)
    monitor = PsutilMonitor()
    monitor.record_transfer(1000, 1.0)

    state = monitor.snapshot(0.0)

    assert (state.link, state.online) == (link, online)
    assert (state.bandwidth_bps == 0.0) == (link is Link.OFFLINE)
