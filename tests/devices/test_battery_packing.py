"""The batched battery play packs its still-playing rows: each device's level and charging are
still those of the one-by-one play (``lazy_battery.battery_at``), bit for bit, wherever it packs."""

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

_PHONES = ("flagship_phone", "midrange_phone", "older_phone")


def _one_by_one(params: TraceParams, names: list[str], seed: int, ids: np.ndarray, t: float) -> list[tuple[float, bool]]:
    """Each device's (level, charging) from the scalar play, its sessions from the scalar path."""
    offsets = params.habit_sd_h * stem(seed, ids).normals(_HABITS)
    found = []
    for name, device, offset in zip(names, ids.tolist(), offsets.tolist()):
        key, behaviour = (seed, device, _BATTERY), params.behaviour(TIERS[name].tier)
        planned = sessions(key, int(t // 86400.0), params, behaviour, offset)
        found.append(battery_at(key, t, params, behaviour, planned))
    return found


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), count=st.integers(1, 300), hour=st.integers(0, 100),
       pack_from=st.sampled_from([1, 2, 5, 64, 10**9]), low=st.sampled_from([0.15, 0.6]),
       plug=st.sampled_from([0.0, 0.05, 1.0]), top_ups=st.sampled_from([1.5, 6.0]))
def test_packed_play_equals_the_scalar_play(seed: int, count: int, hour: int, pack_from: int, low: float,
                                            plug: float, top_ups: float) -> None:
    params = dataclasses.replace(TraceParams(), low_battery=low, low_battery_plug_per_step=plug,
                                 plugins_per_day=top_ups)
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 2_000_000, count)
    names = [_PHONES[i] for i in rng.integers(0, 3, count)]
    t = np.full(count, hour * 3600.0 + 60.0 * int(rng.integers(0, 60)))
    rows = rows_of([TIERS[n] for n in names], params, count)
    offsets = params.habit_sd_h * stem(seed, ids).normals(_HABITS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lazy_batch_battery, "PACK_FROM", pack_from)
        level, charging = lazy_batch_battery.levels(params, rows, seed, ids, t, offsets)

    expected = _one_by_one(params, names, seed, ids, float(t[0]))
    assert list(zip(level.tolist(), charging.tolist())) == expected
