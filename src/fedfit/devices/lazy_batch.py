"""Lazy device state for many devices at once: :class:`~fedfit.devices.lazy_trace.LazyTrace`'s
``state_at`` for an array of device ids at one time (or one time each), in numpy.

The same keyed draws (:func:`~fedfit.devices.counter_rng.uniforms`) and the same float
operations in the same order as the scalar path, so every state equals the one
``LazyTrace(profile, params, seed, device).state_at(t)`` gives, bit for bit: the arithmetic is
correctly rounded in numpy as in Python, and the logarithms, exponentials and cosines of both
paths are the same numpy functions on arrays (:func:`~fedfit.devices.counter_rng.logs`, ...). Devices of several
tiers are computed in one pass when their tiers share a trace *shape* (:func:`shape_of`: the
network and energy regimes, the radios, a battery or none): what differs between them (rates,
ambient temperature, memory, the willing share's curve) is a value per row (:class:`Rows`).
The battery is :mod:`fedfit.devices.lazy_batch_battery`.

>>> from fedfit.devices.catalogue import tier
>>> from fedfit.devices.lazy_trace import LazyTrace
>>> from fedfit.devices.trace_params import TraceParams
>>> profile, params = tier("midrange_phone"), TraceParams()
>>> states = states_at(profile, params, 3, np.array([4, 9]), 7200.0)
>>> states == [LazyTrace(profile, params, 3, d).state_at(7200.0) for d in (4, 9)]
True
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fedfit.bulk import build_many
from fedfit.devices import generators as gen
from fedfit.devices.counter_rng import FloatArray, Stem, stem
from fedfit.devices.lazy_batch_battery import levels
from fedfit.devices.lazy_battery import mean_app_share
from fedfit.devices.state_columns import LINKS as HOT_LINKS
from fedfit.devices.state_columns import ColumnStates, HotStates
from fedfit.devices.lazy_trace import (
    _AVAILABILITY, _DEPOT, _HABITS, _HEAT, _LOWBAND_IN_COVERAGE, _MEMORY, _MOBILE_CDF, _NETWORK, LINK_BLOCK_S,
    log_uniforms, willing_shares,
)
from fedfit.devices.trace_params import TierBehaviour, TraceParams
from fedfit.types import DeviceProfile, DeviceState, Link, Thermal

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: ``generators.LINKS`` codes as the registry's columns code links.
_LINK_CODES = np.array([HOT_LINKS.index(link) for link in gen.LINKS], dtype=np.int8)


def shape_of(profile: DeviceProfile, params: TraceParams) -> Hashable:
    """What devices computed in one pass must share (their tiers' other values go per row)."""
    b = params.behaviour(profile.tier)
    return profile.battery_capacity_j is not None, b.network, b.energy, profile.radios, b.drain_per_h > 0


@dataclass(frozen=True, slots=True)
class Rows:
    """The per-tier values of a batch of devices of one shape, a row per device.

    Attributes:
        behaviours: the distinct behaviours; ``which`` picks each row's.
        which: each row's index into ``behaviours``.
        battery: whether the devices have a battery.
        network: their network regime.
        energy: their energy regime.
        radios: their radios.
        draining: whether the battery drains (a drain rate above 0).
        drain: battery fraction drained per second (at average use), per row.
        gain: battery fraction gained per second charging, per row.
        ambient: resting temperature, per row.
        memory: training memory bytes, per row.
    """

    behaviours: tuple[TierBehaviour, ...]
    which: IntArray
    battery: bool
    network: str
    energy: str
    radios: tuple[Link, ...]
    draining: bool
    drain: FloatArray
    gain: FloatArray
    ambient: FloatArray
    memory: FloatArray

    def behaviour(self, row: int) -> TierBehaviour:
        """Row ``row``'s behaviour."""
        return self.behaviours[int(self.which[row])]


def rows_of(profiles: DeviceProfile | Sequence[DeviceProfile], params: TraceParams, n: int) -> Rows:
    """:class:`Rows` of ``n`` devices: one profile for all, or a profile per device.

    Raises:
        ValueError: the profiles are not all of one shape (:func:`shape_of`).
    """
    if isinstance(profiles, DeviceProfile):
        distinct, which = [profiles], np.zeros(n, dtype=np.int64)
    else:
        keys = list(map(id, profiles))
        by_id = dict(zip(keys, profiles))  # in the order first seen
        index = {k: i for i, k in enumerate(by_id)}
        distinct = list(by_id.values())
        which = np.fromiter(map(index.__getitem__, keys), dtype=np.int64, count=len(keys))
    if not distinct:
        raise ValueError("no profiles given")
    if len({shape_of(p, params) for p in distinct}) > 1:
        raise ValueError("devices batched together must share a trace shape (network, energy, radios, battery)")
    behaviours = tuple(params.behaviour(p.tier) for p in distinct)
    use = 0.5 + 3.5 * mean_app_share(params)

    def column(values: list[float]) -> FloatArray:
        return np.array(values, dtype=np.float64)[which]

    first, b = distinct[0], behaviours[0]
    return Rows(behaviours, which, first.battery_capacity_j is not None, b.network, b.energy, first.radios,
                b.drain_per_h > 0, column([x.drain_per_h / 3600.0 * use for x in behaviours]),
                column([x.charge_per_h / 3600.0 for x in behaviours]), column([x.ambient_c for x in behaviours]),
                column([float(p.training_memory_bytes) for p in distinct]))


def states_at(profiles: DeviceProfile | Sequence[DeviceProfile], params: TraceParams, seed: int, ids: IntArray,
              t_s: float | FloatArray) -> list[DeviceState]:
    """The states of devices ``ids`` at virtual time ``t_s`` (one time, or one per device), before
    consumption; ``profiles``: one for every device, or each device's (all of one shape).

    Raises:
        ValueError: a time is negative or not finite, an id is negative, or the profiles differ in shape.
    """
    t = _on_grid(params, ids, t_s)
    rows, keys = rows_of(profiles, params, len(ids)), stem(seed, ids)  # (seed, device) hashed once for every draw
    offset_h = params.habit_sd_h * keys.normals(_HABITS)
    share = _app_share(params, keys, t)
    code, bps = _link(rows, params, keys, t, offset_h)
    online = _willing(params, rows, keys, t, offset_h) & (code != gen.OFFLINE)
    n = len(ids)
    level_of: list[float | None] = [None] * n
    charging: list[bool | None] = [None] * n
    fraction, charged = np.full(n, np.nan), np.full(n, -1, dtype=np.int8)  # the registry's columns: unknown
    heating = np.zeros(n, dtype=np.bool_)
    if rows.battery:
        level, charge = levels(params, rows, seed, ids, t, offset_h)
        level_of, charging = list(level.tolist()), list(charge.tolist())
        fraction, charged = level, charge.astype(np.int8)
        online &= level > 0
        if rows.energy == "nightly":
            heating = charge
    heat = _temperature(params, rows, keys, t, share, heating)
    temps = heat.tolist()
    levels_of = (Thermal.NOMINAL, Thermal.WARM, Thermal.HOT)  # traces.thermal_of, compared alike
    thermals = map(levels_of.__getitem__, ((heat >= params.warm_c).astype(np.int64) + (heat >= params.hot_c)).tolist())
    free = np.floor(rows.memory * np.minimum(np.maximum(1.0 - share, 0.0), 1.0)).astype(np.int64)
    cpu = np.minimum(1.0, 0.05 + 1.5 * share).tolist()
    links = map(gen.LINKS.__getitem__, code.tolist())
    states = build_many(DeviceState, n, {  # field by field (fedfit.bulk: a round checks in ~1,000)
        "free_memory_bytes": free.tolist(), "battery_fraction": level_of, "charging": charging, "temperature_c": temps,
        "thermal": thermals, "link": links, "bandwidth_bps": bps.tolist(), "online": online.tolist(),
        "cpu_utilisation": cpu})
    hot = HotStates(np.full(n, np.nan), online, charged, fraction, free, _LINK_CODES[code])
    return ColumnStates(states, hot)  # with the hot fields as columns: the registry stores those


def online_at(profiles: DeviceProfile | Sequence[DeviceProfile], params: TraceParams, seed: int, ids: IntArray,
              t_s: float | FloatArray) -> BoolArray:
    """``[s.online for s in states_at(...)]``, without the memory, heat and bandwidth draws (as
    ``LazyTrace.online_at``).

    Raises:
        ValueError: a time is negative or not finite, an id is negative, or the profiles differ in shape.
    """
    t = _on_grid(params, ids, t_s)
    rows, keys = rows_of(profiles, params, len(ids)), stem(seed, ids)
    offset_h = params.habit_sd_h * keys.normals(_HABITS)
    code, _ = _link(rows, params, keys, t, offset_h, bandwidth=False)
    online = _willing(params, rows, keys, t, offset_h) & (code != gen.OFFLINE)
    if rows.battery:
        online &= levels(params, rows, seed, ids, t, offset_h)[0] > 0
    return online


def _on_grid(params: TraceParams, ids: IntArray, t_s: float | FloatArray) -> FloatArray:
    """Each device's time on the step grid, after checking the times and ids."""
    times = np.broadcast_to(np.asarray(t_s, dtype=np.float64), ids.shape)
    if not bool(np.isfinite(times).all()) or bool((times < 0).any()):
        raise ValueError(f"virtual time must be finite and >= 0, got {t_s!r}")
    if len(ids) and int(ids.min()) < 0:
        raise ValueError(f"device ids must be >= 0, got {int(ids.min())}")
    return np.asarray(np.floor(times / params.step_s) * params.step_s, dtype=np.float64)


def _floor(x: FloatArray) -> IntArray:
    return np.floor(x).astype(np.int64)


def _app_share(p: TraceParams, keys: Stem, t: FloatArray) -> FloatArray:
    cycle_s = p.app_mean_on_s + p.app_mean_off_s
    p_on = p.app_mean_on_s / cycle_s
    lo, hi = p.app_share
    share = np.zeros(len(t))
    memory = keys.then(_MEMORY)
    for slot in range(p.app_slots):
        slot_keys = memory.then(slot)
        x = t / cycle_s + slot_keys.uniforms(-1)
        cycle = np.floor(x)
        drawn = lo + (hi - lo) * slot_keys.uniforms(cycle.astype(np.int64))
        share = np.where(x - cycle < p_on, share + drawn, share)
    return share


def _willing(p: TraceParams, rows: Rows, keys: Stem, t: FloatArray, offset_h: FloatArray) -> BoolArray:
    run_s, availability = p.online_mean_run_s, keys.then(_AVAILABILITY)
    phase = availability.uniforms(-1)
    block = np.floor(t / run_s + phase)
    start_h = (block - phase) * run_s / 3600.0
    return availability.uniforms(block.astype(np.int64)) < _willing_share(rows, start_h - offset_h)


def _willing_share(rows: Rows, hours: FloatArray) -> FloatArray:
    """``lazy_trace.willing_shares`` of each row's behaviour at its hour."""
    day = np.array([b.online_day for b in rows.behaviours])[rows.which]
    night = np.array([b.online_night for b in rows.behaviours])[rows.which]
    return willing_shares(day, night, hours)


def _link(rows: Rows, p: TraceParams, keys: Stem, t: FloatArray, offset_h: FloatArray,
          bandwidth: bool = True) -> tuple[IntArray, FloatArray]:
    """Link codes (into ``generators.LINKS``) and bandwidths (zeros unless ``bandwidth``)."""
    radios, network, net = rows.radios, rows.network, keys.then(_NETWORK)
    block = np.floor(t / LINK_BLOCK_S + net.uniforms(-1)).astype(np.int64)
    in_block = net.then(block)
    u = in_block.uniforms()
    if network == "lowband":
        states = np.where(u < _LOWBAND_IN_COVERAGE, -1, 3)  # -1: low-band cellular, 3: offline
    else:
        states = np.minimum(np.searchsorted(np.array(_MOBILE_CDF), u, side="right"), len(_MOBILE_CDF) - 1)
        if network == "vehicle":
            states = np.where(states == 0, 1, states)  # no Wi-Fi on the road
    rules = {s: gen._mobile_link(s, radios, p) for s in range(len(_MOBILE_CDF))}
    rules[-1] = (gen.CELLULAR, p.lowband_bps)
    rules = {s: (gen.OFFLINE, None) if c == gen.CELLULAR and Link.CELLULAR not in radios else (c, b)
             for s, (c, b) in rules.items()}
    code = np.array([rules[s][0] for s in range(-1, len(_MOBILE_CDF))], dtype=np.int64)[states + 1]
    bps = np.zeros(len(t))
    if bandwidth:
        drawn = in_block.uniforms(1)
        for s, (_, bounds) in rules.items():
            if bounds is not None and (mask := states == s).any():
                bps[mask] = log_uniforms(drawn[mask], bounds)
    if network == "vehicle" and Link.WIFI in radios:
        depot = _at_depot(p, net, t, offset_h)
        code = np.where(depot, gen.WIFI, code)
        if bandwidth and depot.any():
            depot_u = net.take(depot).uniforms(_DEPOT, _floor(t[depot] / 86400.0) + 1)
            bps[depot] = log_uniforms(depot_u, p.wifi_bps)
    return code, bps


def _at_depot(p: TraceParams, net: Stem, t: FloatArray, offset_h: FloatArray) -> BoolArray:
    first_h, last_h = p.depot_hours
    day, depot = _floor(t / 86400.0), net.then(_DEPOT)
    found = np.zeros(len(t), dtype=np.bool_)
    for d in (day - 1, day):
        on_day = depot.then(d)
        there = on_day.uniforms(0) < p.depot_wifi_probability
        start_h = 24.0 * d + first_h + offset_h + 0.5 * on_day.normals()
        found |= there & (start_h * 3600.0 <= t) & (t < (start_h + last_h - first_h) * 3600.0)
    return found


def _temperature(p: TraceParams, rows: Rows, keys: Stem, t: FloatArray, share: FloatArray,
                 charging: BoolArray) -> FloatArray:
    heat = keys.then(_HEAT)
    steady = rows.ambient + p.ambient_sd_c * heat.normals(-1)
    steady = steady + (p.use_heat_c * np.minimum(share, 1.0) + np.where(charging, p.charging_heat_c, 0.0))
    keep = 1.0 - p.heat_reversion
    stationary_sd = p.heat_noise_c / math.sqrt(1.0 - keep * keep) if keep < 1.0 else p.heat_noise_c
    return steady + stationary_sd * heat.normals(_floor(t / p.step_s))

