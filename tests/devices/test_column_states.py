"""A check-in's states with their hot fields as columns: the registry stores the columns, and
holds exactly what reporting the same states one by one holds (fresh, refused as older, and
with a trained device's energy taken out)."""

from __future__ import annotations

import numpy as np

from fedfit.devices import Registry, with_consumption
from fedfit.devices.catalogue import TIERS
from fedfit.devices.lazy_traces import LazyTraces
from fedfit.devices.state_columns import ColumnStates
from fedfit.devices.trace_params import TraceParams
from fedfit.types import DeviceState

PROFILES = [TIERS[n] for n in ("flagship_phone", "older_phone", "vehicle_computer", "midrange_phone")] * 30


def _registry() -> Registry:
    registry = Registry()
    for d, profile in enumerate(PROFILES):
        registry.add(d, profile)
    return registry


def _same(a: Registry, b: Registry) -> None:
    assert a.entries() == b.entries()
    ids = a.ids()
    hot_a, hot_b = a.hot_states(ids), b.hot_states(ids)
    for name in hot_a.__slots__:
        np.testing.assert_array_equal(getattr(hot_a, name), getattr(hot_b, name))


def test_columns_are_stored_as_the_states_one_by_one_would_be() -> None:
    traces = LazyTraces(PROFILES, TraceParams(), seed=7)
    by_columns, one_by_one = _registry(), _registry()
    first = list(range(0, 120, 3))
    for registry in (by_columns, one_by_one):  # reported later than the batch below: it must not overwrite them
        for d, s in zip(first, traces.states_at(first, 9000.0)):
            registry.report_state(d, s, 9000.0)
    phones = [d for d, p in enumerate(PROFILES) if p.battery_capacity_j is not None]
    mains = [d for d, p in enumerate(PROFILES) if p.battery_capacity_j is None]  # another trace shape
    for at_s in (3600.0, 30_000.0, 61_234.0):
        for devices in (phones[:: 1 if at_s > 4000 else 2], mains):
            states = traces.states_at(devices, at_s)
            assert isinstance(states, ColumnStates)  # one trace shape: computed in one batch
            if at_s > 60_000 and devices is not mains:  # trained phones' energy taken out, as the fleet's check-in does
                states = _spent(states, devices, list(range(0, len(devices), 4)))
            by_columns.report_states(devices, states, at_s)
            for d, s in zip(devices, list(states)):
                one_by_one.report_state(d, s, at_s)
            _same(by_columns, one_by_one)


def _spent(states: list[DeviceState], devices: list[int], at: list[int]) -> list[DeviceState]:
    assert isinstance(states, ColumnStates)
    spent = [with_consumption(states[i], PROFILES[devices[i]], 9000.0 + 2000.0 * i) for i in at]
    out = states.replaced(at, spent)
    assert [s for s in out] == [spent[at.index(i)] if i in at else s for i, s in enumerate(states)]
    assert any(s.battery_fraction == 0.0 for s in spent) and not all(s.online for s in spent)
    return out
