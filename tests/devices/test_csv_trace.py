"""User CSV traces laid over generated ones."""

from pathlib import Path

import numpy as np
import pytest

from fedfit.devices.catalogue import tier
from fedfit.devices.csv_trace import load_csv_trace, load_csv_traces
from fedfit.devices.traces import DeviceTrace, generate_trace
from fedfit.errors import ConfigError
from fedfit.types import Link, Thermal


@pytest.fixture
def base() -> DeviceTrace:
    return generate_trace(tier("midrange_phone"), seed=0, device_id=1, horizon_s=7200.0)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "foo.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_columns_present_override_from_each_row_on(tmp_path: Path, base: DeviceTrace) -> None:
    path = _write(
        tmp_path,
        "t_s,battery_fraction,charging,link,bandwidth_bps,temperature_c\n"
        "120,0.5,false,wifi,5e7,30\n"
        "600,0.2,true,offline,0,44\n",
    )

    trace = load_csv_trace(path, base)

    early, first, held, second = (trace.state_at(t) for t in (60.0, 120.0, 599.0, 600.0))
    assert early == base.state_at(60.0)  # before the first row the base stands
    assert (first.battery_fraction, first.charging, first.link) == (0.5, False, Link.WIFI)
    assert (first.bandwidth_bps, first.temperature_c, first.thermal) == (5e7, 30.0, Thermal.NOMINAL)
    assert (held.battery_fraction, held.link, held.temperature_c) == (0.5, Link.WIFI, 30.0)
    assert (second.battery_fraction, second.charging, second.link) == (0.2, True, Link.OFFLINE)
    assert (second.bandwidth_bps, second.online, second.thermal) == (0.0, False, Thermal.HOT)
    assert trace.state_at(7000.0).battery_fraction == 0.2  # the last row holds to the end


def test_columns_absent_keep_the_base_values(tmp_path: Path, base: DeviceTrace) -> None:
    path = _write(tmp_path, "t_s,free_memory_bytes\n0,1000\n")

    trace = load_csv_trace(path, base)

    assert np.all(trace.free_memory_bytes == 1000)
    assert trace.battery_fraction is not None and base.battery_fraction is not None
    assert np.array_equal(trace.battery_fraction, base.battery_fraction)
    assert np.array_equal(trace.link, base.link)


def test_base_trace_is_not_modified(tmp_path: Path, base: DeviceTrace) -> None:
    before = base.free_memory_bytes.copy()

    load_csv_trace(_write(tmp_path, "t_s,free_memory_bytes\n0,1000\n"), base)

    assert np.array_equal(base.free_memory_bytes, before)


def test_rows_past_the_horizon_lengthen_the_trace(tmp_path: Path, base: DeviceTrace) -> None:
    trace = load_csv_trace(_write(tmp_path, "t_s,online\n0,1\n9000,0\n"), base)

    assert trace.n_steps == 9000 // 60 + 1
    assert trace.state_at(9000.0).online is False
    assert np.array_equal(trace.free_memory_bytes[base.n_steps :], base.free_memory_bytes[:31])


def test_dead_battery_takes_the_device_offline(tmp_path: Path, base: DeviceTrace) -> None:
    trace = load_csv_trace(_write(tmp_path, "t_s,battery_fraction,online\n0,0,1\n"), base)

    assert trace.state_at(0.0).online is False


def test_out_of_range_value_names_file_row_and_column(tmp_path: Path, base: DeviceTrace) -> None:
    path = _write(tmp_path, "t_s,battery_fraction\n0,0.5\n60,1.7\n")

    with pytest.raises(ConfigError) as err:
        load_csv_trace(path, base)

    assert str(err.value) == f"trace {path} row 3: battery_fraction 1.7 not in [0, 1]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "empty file"),
        ("battery_fraction\n0.5\n", "row 1: missing the required column t_s"),
        ("t_s,colour\n0,red\n", "row 1: unknown column 'colour'"),
        ("t_s,link\n0,wifi\n", "row 1: columns link and bandwidth_bps go together"),
        ("t_s\n", "no data rows"),
        ("t_s,online\n0,1\n0,0\n", "row 3: t_s 0 is not after"),
        ("t_s,online\n0,maybe\n", "row 2: online 'maybe' is not a boolean"),
        ("t_s,online\n0\n", "row 2: 1 fields, the header has 2"),
        ("t_s,link,bandwidth_bps\n0,offline,100\n", "row 2: bandwidth_bps 100 with link offline"),
        ("t_s,link,bandwidth_bps\n0,wifi,0\n", "row 2: bandwidth_bps 0 with link wifi"),
        ("t_s,free_memory_bytes\n0,1e12\n", "row 2: free_memory_bytes 1e12 exceeds"),
        ("t_s,temperature_c\n-5,30\n", "row 2: t_s -5 not in"),
        ("t_s,temperature_c\n0,\n", "row 2: temperature_c is empty"),
    ],
)
def test_bad_file_is_one_line_naming_the_problem(
    tmp_path: Path, base: DeviceTrace, text: str, expected: str
) -> None:
    path = _write(tmp_path, text)

    with pytest.raises(ConfigError) as err:
        load_csv_trace(path, base)

    message = str(err.value)
    assert message.startswith(f"trace {path}")
    assert expected in message and "\n" not in message


def test_missing_file_names_the_path(tmp_path: Path, base: DeviceTrace) -> None:
    path = tmp_path / "absent.csv"

    with pytest.raises(ConfigError, match="absent.csv: file not found"):
        load_csv_trace(path, base)


def test_battery_columns_on_a_mains_device_are_rejected(tmp_path: Path) -> None:
    base = generate_trace(tier("vehicle_computer"), seed=0, device_id=0, horizon_s=600.0)

    with pytest.raises(ConfigError, match="mains-powered"):
        load_csv_trace(_write(tmp_path, "t_s,battery_fraction\n0,0.5\n"), base)


def test_link_the_tier_lacks_is_rejected(tmp_path: Path) -> None:
    base = generate_trace(tier("tablet"), seed=0, device_id=0, horizon_s=600.0)
    path = _write(tmp_path, "t_s,link,bandwidth_bps\n0,cellular,1e6\n")

    with pytest.raises(ConfigError, match="row 2: link cellular is not among the tier's radios"):
        load_csv_trace(path, base)


def _fields(trace: DeviceTrace) -> dict[str, object]:
    return {name: getattr(trace, name) for name in ("free_memory_bytes", "battery_fraction", "charging",
                                                   "temperature_c", "link", "bandwidth_bps", "online",
                                                   "cpu_utilisation")}


def _same(a: DeviceTrace, b: DeviceTrace) -> bool:
    fa, fb = _fields(a), _fields(b)
    return a.profile == b.profile and all(
        (fa[k] is None and fb[k] is None) or (fa[k] is not None and fb[k] is not None
                                              and np.array_equal(fa[k], fb[k], equal_nan=True)  # type: ignore[arg-type]
                                              and fa[k].dtype == fb[k].dtype)  # type: ignore[union-attr]
        for k in fa)


def test_many_devices_from_few_files_equal_one_by_one(tmp_path: Path) -> None:
    one, two = tmp_path / "one.csv", tmp_path / "two.csv"
    one.write_text("t_s,online,temperature_c\n0,true,30\n3600,false,41\n")
    two.write_text("t_s,link,bandwidth_bps\n0,wifi,5e7\n1800,offline,0\n")
    tiers = ["midrange_phone", "midrange_phone", "vehicle_computer", "midrange_phone", "vehicle_computer"]
    bases = {d: generate_trace(tier(name), seed=2, device_id=d, horizon_s=7200.0) for d, name in enumerate(tiers)}
    paths = {0: one, 1: two, 2: one, 3: one, 4: two}

    many = load_csv_traces(paths, bases)

    assert list(many) == list(paths)
    assert all(_same(many[d], load_csv_trace(paths[d], bases[d])) for d in paths)
    assert many[0].temperature_c is not None and many[0].temperature_c[60] == 41.0  # 3600 s at 60 s steps
    assert not many[3].online[60] and not many[1].online[30]


def test_many_devices_report_the_first_bad_file_as_one_by_one_would(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text("t_s,online\n0,true\n")
    bad.write_text("t_s,battery_fraction\n0,0.5\n")  # a battery column: fine on a phone, refused on mains
    bases = {0: generate_trace(tier("midrange_phone"), seed=0, device_id=0, horizon_s=3600.0),
             1: generate_trace(tier("vehicle_computer"), seed=0, device_id=1, horizon_s=3600.0)}

    with pytest.raises(ConfigError) as one_by_one:
        for d, path in {0: bad, 1: bad}.items():
            load_csv_trace(path, bases[d])
    with pytest.raises(ConfigError) as many:
        load_csv_traces({0: good, 1: bad}, bases)

    assert str(many.value) == str(one_by_one.value)
    assert "\n" not in str(many.value) and "bad.csv row 1" in str(many.value)
