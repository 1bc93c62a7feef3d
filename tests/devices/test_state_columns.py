"""The registry's hot state columns: written as reported, read back per device, round-tripped."""

from __future__ import annotations

import random

import numpy as np
import pytest

from fedfit.devices import Registry
from fedfit.devices.catalogue import tier
from fedfit.devices.state_columns import LINKS, StateColumns
from fedfit.types import DeviceState, Link, Thermal


def _state(rng: random.Random) -> DeviceState:
    battery = None if rng.random() < 0.2 else rng.random()
    return DeviceState(free_memory_bytes=rng.randrange(2**20, 2**32), battery_fraction=battery,
                       charging=None if battery is None else rng.random() < 0.5, temperature_c=30.0,
                       thermal=Thermal.NOMINAL, link=rng.choice(list(Link)), bandwidth_bps=1e6,
                       online=rng.random() < 0.7)


def _registry(n: int) -> Registry:
    registry = Registry()
    for d in range(n):
        registry.add(10 * d, tier("midrange_phone" if d % 2 else "smartwatch"))
    return registry


def test_columns_hold_each_reported_field_and_defaults_before_a_report() -> None:
    rng, registry = random.Random(0), _registry(40)  # past the first growth of the columns
    states = {10 * d: _state(rng) for d in range(0, 40, 3)}
    registry.report_states(list(states), list(states.values()), at_s=90.0)

    ids = [10 * d for d in range(40)]
    hot = registry.hot_states(ids)

    for i, d in enumerate(ids):
        s = states.get(d)
        if s is None:
            assert np.isnan(hot.reported_at_s[i]) and not hot.online[i] and hot.charging[i] == -1
            continue
        assert hot.reported_at_s[i] == 90.0 and bool(hot.online[i]) == s.online
        assert hot.free_memory_bytes[i] == s.free_memory_bytes and LINKS[hot.link[i]] == s.link
        assert hot.charging[i] == (-1 if s.charging is None else int(s.charging))
        assert (np.isnan(hot.battery_fraction[i]) if s.battery_fraction is None
                else hot.battery_fraction[i] == s.battery_fraction)


def test_batched_reports_equal_one_by_one_reports_including_stale_ones() -> None:
    rng = random.Random(1)
    batched, single = _registry(30), _registry(30)
    for at_s in (100.0, 50.0, 100.0, 160.0):  # 50: older than held, ignored; 100 again: replaces
        ids = [10 * d for d in rng.sample(range(30), 12)]
        states = [_state(rng) for _ in ids]
        batched.report_states(ids, states, at_s)
        for d, s in zip(ids, states):
            single.report_state(d, s, at_s)

    assert batched.entries() == single.entries()
    ids = batched.ids()
    a, b = batched.hot_states(ids), single.hot_states(ids)
    for name in a.__slots__:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_an_older_report_is_refused_and_a_same_time_report_replaces() -> None:
    rng, registry = random.Random(2), _registry(1)
    first, older, again = _state(rng), _state(rng), _state(rng)

    assert registry.report_state(0, first, 60.0)
    assert not registry.report_state(0, older, 30.0)
    assert registry.report_state(0, again, 60.0)
    assert registry.last_state(0) == again and registry.last_report_s(0) == 60.0


def test_entries_restore_round_trip_keeps_states_times_and_columns() -> None:
    rng, registry = random.Random(3), _registry(25)
    registry.report_states([0, 10, 20], [_state(rng) for _ in range(3)], 12.5)
    registry.record_result(10, ok=False, cause="battery", duration_s=4.0, round=1)

    restored = Registry()
    restored.restore(registry.entries())

    assert restored.entries() == registry.entries() and restored.ids() == registry.ids()
    a, b = restored.hot_states(registry.ids()), registry.hot_states(registry.ids())
    for name in a.__slots__:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert restored.last_report_s(30) is None and restored.history(10).failures_by_cause == {"battery": 1}


def test_columns_grow_and_keep_earlier_rows() -> None:
    columns = StateColumns()
    rows = [columns.append() for _ in range(100)]
    s = _state(random.Random(4))
    columns.write(np.array([3, 97]), [s, s], [1.0, 2.0])

    got = columns.rows(np.array(rows)).reported_at_s

    assert len(columns) == 100 and got[3] == 1.0 and got[97] == 2.0 and int(np.isnan(got).sum()) == 98


def test_ids_that_stop_being_their_rows_are_indexed_and_still_found() -> None:
    registry = _registry(1)  # id 0 at row 0: no index needed
    registry.add(1, tier("smartwatch"))
    registry.add(7, tier("smartwatch"))  # from here on ids are looked up
    registry.add(2, tier("smartwatch"))

    assert registry.ids() == [0, 1, 7, 2] and all(d in registry for d in (0, 1, 7, 2))
    assert 3 not in registry and -1 not in registry and "0" not in registry
    assert registry.profile(7) == tier("smartwatch") and registry.profile(0) == tier("smartwatch")
    registry.report_states([7, 2], [_state(random.Random(5))] * 2, 1.0)
    assert registry.last_report_s(7) == 1.0 and registry.last_report_s(1) is None
    with pytest.raises(ValueError, match="already registered"):
        registry.add(7, tier("smartwatch"))
    with pytest.raises(KeyError, match="unknown device 3"):
        registry.profile(3)


def test_a_fleet_numbered_in_order_reports_together_as_one_by_one_and_rejects_unknown_ids() -> None:
    # ids 0, 1, 2, ... are their own rows: looked up as one array, not one by one
    rng, batched, single = random.Random(5), Registry(), Registry()
    for d in range(40):
        batched.add(d, tier("smartwatch"))
        single.add(d, tier("smartwatch"))
    ids = [int(d) for d in np.random.default_rng(5).permutation(40)[:25]]
    states = [_state(rng) for _ in ids]

    batched.report_states(np.array(ids).tolist(), states, 30.0)
    for d, s in zip(ids, states):
        single.report_state(d, s, 30.0)

    assert batched.entries() == single.entries()
    a, b = batched.hot_states(np.arange(40).tolist()), single.hot_states(list(range(40)))
    for name in a.__slots__:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    for unknown in (40, -1):
        with pytest.raises(KeyError, match=f"unknown device {unknown}"):
            batched.report_states([3, unknown], states[:2], 60.0)
    assert batched.last_report_s(3) == (30.0 if 3 in ids else None)  # nothing written
