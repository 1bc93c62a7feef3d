"""Lazy state for many devices at once equals the scalar path, bit for bit."""

from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest

from fedfit.devices import counter_rng
from fedfit.devices.catalogue import TIERS, tier
from fedfit.devices.counter_rng import normal, normals, uniform, uniforms
from fedfit.devices import lazy_batch
from fedfit.devices.lazy_batch import online_at, shape_of, states_at
from fedfit.devices import lazy_traces
from fedfit.devices.lazy_trace import LazyTrace
from fedfit.devices.lazy_traces import LazyTraces
from fedfit.devices.trace_params import TraceParams
from fedfit.types import Thermal

_KEYS = [0, 1, 7, -1, -2, -7, 12345, 2**40 + 3, -(2**40), 2**61 - 2, 2**61 - 1, 2**61, -(2**61 - 1), 2**62 + 5]


@pytest.mark.parametrize("count", [1, 8, 40])  # one by one up to counter_rng.SCALAR_UP_TO, numpy above
def test_uniforms_equal_the_scalar_hash_for_any_keys(count: int) -> None:
    rng = random.Random(count)
    for _ in range(300):
        keys = [rng.choice(_KEYS) for _ in range(rng.randint(1, 6))]
        column = rng.randrange(len(keys))
        values = [rng.choice(_KEYS) for _ in range(count)]
        batched = uniforms(*keys[:column], np.array(values, dtype=np.int64), *keys[column + 1:])
        assert batched.tolist() == [uniform(*keys[:column], v, *keys[column + 1:]) for v in values]


def test_small_draws_of_two_dimensional_keys_equal_the_numpy_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    ids, days = np.array([[4], [9]], dtype=np.int64), np.array([[1, 2, 3]], dtype=np.int64)
    one_by_one = uniforms(7, ids, 2, days, -1)
    monkeypatch.setattr(counter_rng, "SCALAR_UP_TO", 0)

    assert one_by_one.shape == (2, 3)
    assert one_by_one.tolist() == uniforms(7, ids, 2, days, -1).tolist() == [
        [uniform(7, d, 2, day, -1) for day in (1, 2, 3)] for d in (4, 9)]


def test_normals_equal_the_scalar_normals() -> None:
    ids = np.arange(50, dtype=np.int64)

    assert normals(3, ids, -1).tolist() == [normal(3, d, -1) for d in range(50)]
    grid = np.arange(6, dtype=np.int64).reshape(2, 3)  # any shape, through the array pass
    assert normals(5, grid, 2).tolist() == [[normal(5, int(d), 2) for d in row] for row in grid.tolist()]


def test_array_log_uniforms_and_willing_shares_equal_the_scalar_functions() -> None:
    from fedfit.devices import generators
    from fedfit.devices import lazy_trace

    rng = random.Random(4)
    u = [0.0, 1.0 - 2.0**-53, 0.5] + [rng.random() for _ in range(2000)]
    for bounds in ((1.0e5, 2.0e7), (3.0, 3.0), (2.5e4, 1.0e9)):
        batched = lazy_trace.log_uniforms(np.array(u), bounds).tolist()
        assert batched == [lazy_trace._log_uniform(x, bounds) for x in u]
        assert batched == pytest.approx([bounds[0] * (bounds[1] / bounds[0]) ** x for x in u], rel=1e-12)
    params = TraceParams()
    profiles = [TIERS[n] for n in ("flagship_phone", "midrange_phone", "older_phone")] * 700
    rows = lazy_batch.rows_of(profiles, params, len(profiles))
    hours = [rng.uniform(-30.0, 80.0) for _ in profiles]
    got = lazy_batch._willing_share(rows, np.array(hours)).tolist()
    one_by_one = [lazy_trace.willing_shares(np.array([params.behaviour(p.tier).online_day]),
                                            np.array([params.behaviour(p.tier).online_night]), np.array([h]))[0]
                  for p, h in zip(profiles, hours)]
    assert got == one_by_one
    # the array generator's curve (math.cos), to the last few places
    assert got == pytest.approx([generators._willing_share(params.behaviour(p.tier), h)
                                 for p, h in zip(profiles, hours)], rel=1e-14, abs=1e-15)


@pytest.mark.parametrize("size", [1, 2, 7, 1000])
def test_transcendentals_of_one_value_equal_those_of_many_at_any_batch_size(size: int) -> None:
    # numpy's vector loops may differ from math in the last place; both paths take these
    # functions on arrays, so a value must not depend on how many are computed with it
    x = np.random.default_rng(size).uniform(1e-9, 40.0, size)
    for f in (counter_rng.logs, counter_rng.exps, counter_rng.cosines):
        assert f(x).tolist() == [float(f(v)[0]) for v in x.tolist()]
        assert f(x[::-1]).tolist() == f(x).tolist()[::-1]
    ids = np.random.default_rng(size).integers(0, 2**40, size)
    assert normals(3, ids, 5).tolist() == [normal(3, int(d), 5) for d in ids]


@pytest.mark.parametrize("size", [1, 2, 7, 1000])
@pytest.mark.parametrize("name", ["older_phone", "vehicle_computer", "smartwatch"])
def test_batched_states_equal_scalar_states_at_any_batch_size(size: int, name: str) -> None:
    params = dataclasses.replace(TraceParams(), low_battery=0.5, low_battery_plug_per_step=0.05)  # reactions
    ids = np.random.default_rng(size).integers(0, 1_000_000, size)
    for t in (5 * 3600.0, 86400.0 + 20 * 3600.0):
        expected = [LazyTrace(TIERS[name], params, 2, int(d)).state_at(t) for d in ids]
        assert states_at(TIERS[name], params, 2, ids, t) == expected


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
    monkeypatch.setattr(lazy_traces, "BATCH_FROM", 16)  # the tablets together, the others one by one
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
    monkeypatch.setattr(lazy_traces, "ONLINE_BATCH_FROM", 16)  # the watches together, the phones one by one
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
    params = dataclasses.replace(TraceParams(), plugins_per_day=6.0, low_battery=0.6,
                                 low_battery_plug_per_step=plug_chance)
    ids = np.random.default_rng(2).integers(0, 1_000_000, 150)
    for t in (3 * 3600.0, 20 * 3600.0, 2 * 86400.0 + 9 * 3600.0):
        expected = [LazyTrace(TIERS["older_phone"], params, 1, int(d)).state_at(t) for d in ids]
        assert states_at(TIERS["older_phone"], params, 1, ids, t) == expected


def test_tiers_of_one_shape_are_computed_in_one_pass_equal_to_scalar_states() -> None:
    # three phone tiers and a user tier (default behaviour) differ in drain, charge, heat,
    # memory and willing curve, not in shape: one batch, each row its own tier's values
    custom = dataclasses.replace(tier("older_phone"), tier="budget_phone", training_memory_bytes=3 * 2**20)
    kinds = [TIERS["flagship_phone"], TIERS["midrange_phone"], TIERS["older_phone"], custom]
    params, rng = TraceParams(), np.random.default_rng(5)
    ids = rng.integers(0, 1_000_000, 240)
    profiles = [kinds[int(k)] for k in rng.integers(0, 4, 240)]
    for t in (2 * 3600.0, 23 * 3600.0, 86400.0 + 13 * 3600.0):
        expected = [LazyTrace(p, params, 8, int(d)).state_at(t) for p, d in zip(profiles, ids)]
        assert states_at(profiles, params, 8, ids, t) == expected
        assert online_at(profiles, params, 8, ids, t).tolist() == [s.online for s in expected]


def test_tiers_of_different_shapes_are_not_batched_together() -> None:
    with pytest.raises(ValueError, match="trace shape"):
        states_at([TIERS["flagship_phone"], TIERS["sensor_mcu"]], TraceParams(), 0, np.array([1, 2]), 60.0)
    assert shape_of(TIERS["flagship_phone"], TraceParams()) == shape_of(TIERS["older_phone"], TraceParams())
    assert shape_of(TIERS["flagship_phone"], TraceParams()) != shape_of(TIERS["vehicle_computer"], TraceParams())


def test_lazy_traces_batch_mixed_phone_tiers_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lazy_traces, "BATCH_FROM", 30)  # 3 x 12 phones: batched only as one shape
    monkeypatch.setattr(lazy_traces, "ONLINE_BATCH_FROM", 30)
    calls: list[int] = []
    real = lazy_batch.states_at
    monkeypatch.setattr(lazy_batch, "states_at", lambda p, *a: calls.append(len(p)) or real(p, *a))
    profiles = [TIERS[n] for n in ("flagship_phone", "midrange_phone", "older_phone")] * 12
    traces = LazyTraces(profiles, TraceParams(), seed=6)
    devices, times = list(range(36)), [5000.0 + 700.0 * d for d in range(36)]

    assert traces.states_at(devices, 9000.0) == [LazyTrace(p, TraceParams(), 6, d).state_at(9000.0)
                                                 for d, p in enumerate(profiles)]
    assert calls == [36]
    assert traces.online_many(devices, times) == [LazyTrace(p, TraceParams(), 6, d).state_at(t).online
                                                  for d, (p, t) in enumerate(zip(profiles, times))]


def test_batched_thermal_states_equal_scalar_ones_at_every_level() -> None:
    params = dataclasses.replace(TraceParams(), warm_c=31.0, hot_c=33.0)  # all three levels common
    ids = np.arange(600, dtype=np.int64)
    got = states_at(TIERS["smartwatch"], params, 1, ids, 14 * 3600.0)

    assert got == [LazyTrace(TIERS["smartwatch"], params, 1, int(d)).state_at(14 * 3600.0) for d in ids]
    assert {s.thermal for s in got} == {Thermal.NOMINAL, Thermal.WARM, Thermal.HOT}


@pytest.mark.parametrize("mean", [0.0, 1.5, 6.0, 80.0])
def test_poisson_counts_invert_the_poisson_cdf(mean: float) -> None:
    from fedfit.devices.lazy_battery import poisson_counts

    u = np.random.default_rng(int(mean)).random(4000)
    got = poisson_counts(u, mean)

    # the first k whose CDF (summed from the pmf e^-m m^k / k!) reaches u, capped at 50
    cdf = np.cumsum([math.exp(-mean + k * math.log(mean) - math.lgamma(k + 1)) if mean > 0 else float(k == 0)
                     for k in range(50)])
    expected = np.minimum(np.searchsorted(cdf, u), 50)
    assert (np.abs(got - expected) <= 1).all() and (got == expected).mean() > 0.999
    assert got.mean() == pytest.approx(min(mean, 50.0), rel=0.1, abs=0.05)
