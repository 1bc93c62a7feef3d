"""Lazy state for many devices at once equals the scalar path, bit for bit."""

from __future__ import annotations

import random

import numpy as np
import pytest

from fedfit.devices.catalogue import TIERS
from fedfit.devices.counter_rng import normal, normals, uniform, uniforms
from fedfit.devices.lazy_batch import online_at, states_at
from fedfit.devices import lazy_trace
from fedfit.devices.lazy_trace import LazyTrace, LazyTraces
from fedfit.devices.trace_params import TraceParams

_KEYS = [0, 1, 7, -1, -2, -7, 12345, 2**40 + 3, -(2**40), 2**61 - 2, 2**61 - 1, 2**61, -(2**61 - 1), 2**62 + 5]


def test_uniforms_equal_the_scalar_hash_for_any_keys() -> None:
    rng = random.Random(0)
    for _ in range(300):
        keys = [rng.choice(_KEYS) for _ in range(rng.randint(1, 6))]
        column = rng.randrange(len(keys))
        values = [rng.choice(_KEYS) for _ in range(8)]
        batched = uniforms(*keys[:column], np.array(values, dtype=np.int64), *keys[column + 1:])
        assert batched.tolist() == [uniform(*keys[:column], v, *keys[column + 1:]) for v in values]


def test_normals_equal_the_scalar_normals() -> None:
    ids = np.arange(50, dtype=np.int64)

    assert normals(3, ids, -1).tolist() == [normal(3, d, -1) for d in range(50)]


@pytest.mark.parametrize("name", sorted(TIERS))
def test_batched_states_equal_scalar_states_for_every_tier(name: str) -> None:
    params, rng = TraceParams(), np.random.default_rng(1)
    # times across days (battery anchors and sessions move at midnight), nights (bedtime
    # charging, the vehicle's depot Wi-Fi) and off the step grid
    for t in (0.0, 59.5, 7 * 3600.0, 22.5 * 3600.0, 86400.0 + 2 * 3600.0, 3 * 86400.0 + 1234.0):
        ids = rng.integers(0, 2_000_000, 200)
        expected = [LazyTrace(TIERS[name], params, 5, int(d)).state_at(t) for d in ids]
        assert states_at(TIERS[name], params, 5, ids, t) == expected


def test_batched_states_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="virtual time"):
        states_at(TIERS["smartwatch"], TraceParams(), 0, np.array([1]), -1.0)
    with pytest.raises(ValueError, match="device ids"):
        states_at(TIERS["smartwatch"], TraceParams(), 0, np.array([-3]), 1.0)


def test_lazy_traces_answer_mixed_profiles_and_csv_overrides_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lazy_trace, "BATCH_FROM", 16)  # the tablets together, the others one by one
    params = TraceParams()
    profiles = [TIERS[n] for n in ("flagship_phone", "smartwatch", "sensor_mcu")] * 10 + [TIERS["tablet"]] * 40
    override = LazyTrace(TIERS["tablet"], params, 99, 3)  # any StateTrace stands in for a CSV trace
    traces = LazyTraces(profiles, params, seed=2, overrides={4: override})  # type: ignore[dict-item]
    devices = [29, 4, 0, 13, 4, 7, *range(30, 70)]  # a few (one by one) and many (together)

    got = traces.states_at(devices, 5000.0)

    assert got == [traces[d].state_at(5000.0) for d in devices]
    assert got[1] == override.state_at(5000.0)


def test_batched_states_at_one_time_per_device_equal_scalar_states() -> None:
    params, rng = TraceParams(), np.random.default_rng(2)
    for name in ("midrange_phone", "vehicle_computer", "sensor_mcu"):
        ids = rng.integers(0, 500_000, 300)
        times = rng.uniform(0.0, 5 * 86400.0, 300)
        expected = [LazyTrace(TIERS[name], params, 9, int(d)).state_at(float(t)) for d, t in zip(ids, times)]
        assert states_at(TIERS[name], params, 9, ids, times) == expected
        assert [s.online for s in expected] == [LazyTrace(TIERS[name], params, 9, int(d)).online_at(float(t))
                                                 for d, t in zip(ids, times)]


@pytest.mark.parametrize("name", ["older_phone", "vehicle_computer", "sensor_mcu", "tablet"])
def test_batched_online_equals_the_full_states_online(name: str) -> None:
    params, rng = TraceParams(), np.random.default_rng(3)
    ids, times = rng.integers(0, 500_000, 300), rng.uniform(0.0, 5 * 86400.0, 300)

    assert online_at(TIERS[name], params, 4, ids, times).tolist() == [
        s.online for s in states_at(TIERS[name], params, 4, ids, times)]


def test_lazy_traces_online_many_equals_states(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lazy_trace, "ONLINE_BATCH_FROM", 16)  # the watches together, the phones one by one
    profiles = [TIERS["smartwatch"]] * 20 + [TIERS["older_phone"]] * 3
    traces = LazyTraces(profiles, TraceParams(), seed=1)
    devices, times = list(range(23)), [3600.0 * (1 + d) for d in range(23)]

    assert traces.online_many(devices, times) == [traces[d].state_at(t).online for d, t in zip(devices, times)]


def test_normals_of_two_dimensional_keys_equal_the_scalar_normals() -> None:
    ids, days = np.arange(6, dtype=np.int64)[:, None], np.array([[3, 4, 5]] * 6, dtype=np.int64)

    got = normals(2, ids, 9, days)

    assert got.shape == (6, 3)
    assert got.tolist() == [[normal(2, d, 9, day) for day in (3, 4, 5)] for d in range(6)]


@pytest.mark.parametrize("plug_chance", [0.0, 0.05, 1.0])
def test_batched_battery_equals_scalar_with_many_top_ups_and_low_battery_reactions(plug_chance: float) -> None:
    # many Poisson top-ups a day, a fast drain that reaches the low-battery mark often, and the
    # geometric wait's edge cases (never plugs in, plugs in at once)
    import dataclasses

    params = dataclasses.replace(TraceParams(), plugins_per_day=6.0, low_battery=0.6,
                                 low_battery_plug_per_step=plug_chance)
    ids = np.random.default_rng(2).integers(0, 1_000_000, 150)
    for t in (3 * 3600.0, 20 * 3600.0, 2 * 86400.0 + 9 * 3600.0):
        expected = [LazyTrace(TIERS["older_phone"], params, 1, int(d)).state_at(t) for d in ids]
        assert states_at(TIERS["older_phone"], params, 1, ids, t) == expected
