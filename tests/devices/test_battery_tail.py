"""The battery play's tail, one device at a time (``lazy_battery_tail.finish``): each device's
level and charging are still those of the one-by-one play (``lazy_battery.battery_at``) and of
the all-numpy play, bit for bit, wherever the tail starts (from the first pass to never)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedfit.devices import lazy_batch_battery
from fedfit.devices.catalogue import TIERS
from fedfit.devices.counter_rng import stem
from fedfit.devices.lazy_batch import rows_of
from fedfit.devices.lazy_battery import battery_at, sessions
from fedfit.devices.lazy_trace import _BATTERY, _HABITS
from fedfit.devices.trace_params import TraceParams

_TIERS = ("flagship_phone", "midrange_phone", "older_phone")


def _one_by_one(params: TraceParams, names: list[str], seed: int, ids: np.ndarray,
                t: np.ndarray) -> list[tuple[float, bool]]:
    """Each device's (level, charging) from the scalar play, its sessions from the scalar path."""
    offsets = params.habit_sd_h * stem(seed, ids).normals(_HABITS)
    found = []
    for name, device, offset, at in zip(names, ids.tolist(), offsets.tolist(), t.tolist()):
        key, behaviour = (seed, device, _BATTERY), params.behaviour(TIERS[name].tier)
        planned = sessions(key, int(at // 86400.0), params, behaviour, offset)
        found.append(battery_at(key, at, params, behaviour, planned))
    return found


def _batched(params: TraceParams, names: list[str], seed: int, ids: np.ndarray, t: np.ndarray,
             tail: int, pack_from: int) -> list[tuple[float, bool]]:
    rows = rows_of([TIERS[n] for n in names], params, len(ids))
    offsets = params.habit_sd_h * stem(seed, ids).normals(_HABITS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lazy_batch_battery, "TAIL_BELOW", tail)
        patch.setattr(lazy_batch_battery, "PACK_FROM", pack_from)
        level, charging = lazy_batch_battery.levels(params, rows, seed, ids, t, offsets)
    return list(zip(level.tolist(), charging.tolist()))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), count=st.integers(1, 200), hour=st.integers(0, 100),
       tail=st.sampled_from([1, 3, 48, 10**9]), pack_from=st.sampled_from([1, 64, 10**9]),
       low=st.sampled_from([0.15, 0.6, 0.95]), plug=st.sampled_from([0.0, 0.05, 1.0]),
       top_ups=st.sampled_from([0.0, 1.5, 6.0]), spread=st.booleans())
def test_the_tail_equals_the_scalar_and_the_numpy_play(seed: int, count: int, hour: int, tail: int, pack_from: int,
                                                        low: float, plug: float, top_ups: float, spread: bool) -> None:
    params = dataclasses.replace(TraceParams(), low_battery=low, low_battery_plug_per_step=plug,
                                 plugins_per_day=top_ups)
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 2_000_000, count)
    names = [_TIERS[i] for i in rng.integers(0, 3, count)]
    minutes = rng.integers(0, 60 * (48 if spread else 1), count)
    t = hour * 3600.0 + 60.0 * minutes.astype(np.float64)

    found = _batched(params, names, seed, ids, t, tail, pack_from)

    assert found == _one_by_one(params, names, seed, ids, t)
    assert found == _batched(params, names, seed, ids, t, 0, pack_from)  # never the tail: the numpy play


def test_a_row_that_gains_nothing_charging_stays_in_the_numpy_play() -> None:
    params = TraceParams()
    names = ["flagship_phone"] * 5
    rows = dataclasses.replace(rows_of([TIERS[n] for n in names], params, 5), gain=np.zeros(5))
    ids, t = np.arange(5), np.full(5, 30 * 3600.0)
    offsets = params.habit_sd_h * stem(0, ids).normals(_HABITS)
    found = {}
    for tail in (0, 10**9):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(lazy_batch_battery, "TAIL_BELOW", tail)
            with np.errstate(all="ignore"):
                level, charging = lazy_batch_battery.levels(params, rows, 0, ids, t, offsets)
        found[tail] = (level.tobytes(), charging.tobytes())
    assert found[0] == found[10**9]


@pytest.mark.parametrize("tail", [3, 10**9])
def test_a_second_low_battery_reaction_in_the_tail_goes_to_the_scalar_play(tail: int) -> None:
    # Users who never plug in when warned (chance 0) and are warned at 95%: a reaction waits for
    # ever, so the next discharge after a session warns again while it waits.
    params = dataclasses.replace(TraceParams(), low_battery=0.95, low_battery_plug_per_step=0.0)
    ids = np.arange(150, dtype=np.int64)
    names = [_TIERS[i % 3] for i in range(150)]
    t = np.full(150, 70 * 3600.0) + 600.0 * (ids % 50)
    handed = []
    with pytest.MonkeyPatch.context() as patch:
        def counted(*args: object, **kwargs: object) -> tuple[float, bool]:
            handed.append(args[0])
            return battery_at(*args, **kwargs)  # type: ignore[arg-type]
        patch.setattr(lazy_batch_battery, "battery_at", counted)
        found = _batched(params, names, 7, ids, t, tail, 64)

    assert handed  # the case this test is for
    assert found == _one_by_one(params, names, 7, ids, t)


@pytest.mark.parametrize("plug", [1.0, 0.05])
def test_a_reaction_taken_in_the_pass_it_is_drawn_equals_the_scalar_play(plug: float) -> None:
    # Warned at 60% with six top-ups a day: most devices fall low between sessions, and their
    # top-up (at once, or after a geometric wait) sorts before or after the session popped. The
    # numpy play throughout (no tail) takes whichever sorts first in the pass the warning is drawn.
    params = dataclasses.replace(TraceParams(), low_battery=0.6, low_battery_plug_per_step=plug, plugins_per_day=6.0)
    rng = np.random.default_rng(11)
    ids = rng.integers(0, 2_000_000, 240)
    names = [_TIERS[i] for i in rng.integers(0, 3, 240)]
    for hour in (5, 19, 40):
        t = hour * 3600.0 + 60.0 * rng.integers(0, 600, 240).astype(np.float64)
        assert _batched(params, names, 4, ids, t, 0, 64) == _one_by_one(params, names, 4, ids, t)
