"""Lazy device state for many devices at once: :class:`~fedfit.devices.lazy_trace.LazyTrace`'s
``state_at`` for an array of device ids of one profile at one time, in numpy.

The same keyed draws (:func:`~fedfit.devices.counter_rng.uniforms`) and the same float
operations in the same order as the scalar path, so every state equals the one
``LazyTrace(profile, params, seed, device).state_at(t)`` gives, bit for bit; only the battery's
play-forward through its charge sessions stays a loop per device (a few float steps, its
sessions drawn here in one go). A round's candidates cost a few numpy passes instead of ~40
keyed hashes each in Python.

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

import numpy as np
import numpy.typing as npt

from fedfit.devices import generators as gen
from fedfit.devices.counter_rng import FloatArray, normals, uniforms
from fedfit.devices.lazy_battery import (
    _ANCHOR, _NIGHTLY, _PLUGIN, _REACT, DAY_S, _geometric_wait, _plug_length_s, battery_at, mean_app_share,
)
from fedfit.devices.lazy_trace import (
    _AVAILABILITY, _BATTERY, _DEPOT, _HABITS, _HEAT, _LOWBAND_IN_COVERAGE, _MEMORY, _MOBILE_CDF, _NETWORK,
    LINK_BLOCK_S,
)
from fedfit.devices.trace_params import TierBehaviour, TraceParams
from fedfit.devices.traces import thermal_of
from fedfit.types import DeviceProfile, DeviceState, Link

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def states_at(profile: DeviceProfile, params: TraceParams, seed: int, ids: IntArray,
              t_s: float | FloatArray) -> list[DeviceState]:
    """The states of devices ``ids`` (all of ``profile``) at virtual time ``t_s`` (one time, or
    one per device), before consumption.

    Raises:
        ValueError: a time is negative or not finite, or an id is negative.
    """
    t = _on_grid(params, ids, t_s)
    behaviour = params.behaviour(profile.tier)
    offset_h = params.habit_sd_h * normals(seed, ids, _HABITS)
    share = _app_share(params, seed, ids, t)
    code, bps = _link(profile, params, behaviour, seed, ids, t, offset_h)
    online = _willing(params, behaviour, seed, ids, t, offset_h) & (code != gen.OFFLINE)
    levels: list[float | None] = [None] * len(ids)
    charging: list[bool | None] = [None] * len(ids)
    if profile.battery_capacity_j is not None:
        planned = _sessions(params, behaviour, seed, ids, t, offset_h)
        anchors = uniforms(seed, ids, _BATTERY, _ANCHOR, _floor(t / DAY_S) - 1)
        level, charge = _batteries(params, behaviour, seed, ids, t, planned, anchors)
        levels, charging = list(level.tolist()), list(charge.tolist())
        online &= level > 0
    heating = np.array([bool(c) and behaviour.energy == "nightly" for c in charging], dtype=np.bool_)
    temps = _temperature(params, behaviour, seed, ids, t, share, heating).tolist()
    free = np.floor(profile.training_memory_bytes * np.minimum(np.maximum(1.0 - share, 0.0), 1.0)).tolist()
    cpu = np.minimum(1.0, 0.05 + 1.5 * share).tolist()
    links = [gen.LINKS[c] for c in code.tolist()]
    return [DeviceState(free_memory_bytes=int(free[i]), battery_fraction=levels[i], charging=charging[i],
                        temperature_c=temps[i], thermal=thermal_of(temps[i], params), link=links[i],
                        bandwidth_bps=b, online=o, cpu_utilisation=cpu[i])
            for i, (b, o) in enumerate(zip(bps.tolist(), online.tolist()))]


def online_at(profile: DeviceProfile, params: TraceParams, seed: int, ids: IntArray,
              t_s: float | FloatArray) -> BoolArray:
    """``[s.online for s in states_at(...)]``, without the memory, heat and bandwidth draws (as
    ``LazyTrace.online_at``).

    Raises:
        ValueError: a time is negative or not finite, or an id is negative.
    """
    t = _on_grid(params, ids, t_s)
    behaviour = params.behaviour(profile.tier)
    offset_h = params.habit_sd_h * normals(seed, ids, _HABITS)
    code, _ = _link(profile, params, behaviour, seed, ids, t, offset_h, bandwidth=False)
    online = _willing(params, behaviour, seed, ids, t, offset_h) & (code != gen.OFFLINE)
    if profile.battery_capacity_j is not None:
        planned = _sessions(params, behaviour, seed, ids, t, offset_h)
        anchors = uniforms(seed, ids, _BATTERY, _ANCHOR, _floor(t / DAY_S) - 1)
        online &= _batteries(params, behaviour, seed, ids, t, planned, anchors)[0] > 0
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


def _app_share(p: TraceParams, seed: int, ids: IntArray, t: FloatArray) -> FloatArray:
    cycle_s = p.app_mean_on_s + p.app_mean_off_s
    p_on = p.app_mean_on_s / cycle_s
    lo, hi = p.app_share
    share = np.zeros(len(ids))
    for slot in range(p.app_slots):
        x = t / cycle_s + uniforms(seed, ids, _MEMORY, slot, -1)
        cycle = np.floor(x)
        drawn = lo + (hi - lo) * uniforms(seed, ids, _MEMORY, slot, cycle.astype(np.int64))
        share = np.where(x - cycle < p_on, share + drawn, share)
    return share


def _willing(p: TraceParams, behaviour: TierBehaviour, seed: int, ids: IntArray, t: FloatArray,
             offset_h: FloatArray) -> BoolArray:
    run_s = p.online_mean_run_s
    phase = uniforms(seed, ids, _AVAILABILITY, -1)
    block = np.floor(t / run_s + phase)
    start_h = (block - phase) * run_s / 3600.0
    wanted = [gen._willing_share(behaviour, h) for h in (start_h - offset_h).tolist()]
    return uniforms(seed, ids, _AVAILABILITY, block.astype(np.int64)) < np.array(wanted)


def _link(profile: DeviceProfile, p: TraceParams, behaviour: TierBehaviour, seed: int, ids: IntArray, t: FloatArray,
          offset_h: FloatArray, bandwidth: bool = True) -> tuple[IntArray, FloatArray]:
    """Link codes (into ``generators.LINKS``) and bandwidths (zeros unless ``bandwidth``)."""
    radios = profile.radios
    block = np.floor(t / LINK_BLOCK_S + uniforms(seed, ids, _NETWORK, -1)).astype(np.int64)
    u = uniforms(seed, ids, _NETWORK, block)
    if behaviour.network == "lowband":
        states = np.where(u < _LOWBAND_IN_COVERAGE, -1, 3)  # -1: low-band cellular, 3: offline
    else:
        states = np.minimum(np.searchsorted(np.array(_MOBILE_CDF), u, side="right"), len(_MOBILE_CDF) - 1)
        if behaviour.network == "vehicle":
            states = np.where(states == 0, 1, states)  # no Wi-Fi on the road
    rules = {s: gen._mobile_link(s, radios, p) for s in range(len(_MOBILE_CDF))}
    rules[-1] = (gen.CELLULAR, p.lowband_bps)
    rules = {s: (gen.OFFLINE, None) if c == gen.CELLULAR and Link.CELLULAR not in radios else (c, b)
             for s, (c, b) in rules.items()}
    code = np.array([rules[s][0] for s in states.tolist()], dtype=np.int64)
    bps = np.zeros(len(ids))
    if bandwidth:
        drawn = uniforms(seed, ids, _NETWORK, block, 1).tolist()
        bps = np.array([0.0 if (b := rules[s][1]) is None else _log_uniform(v, b)
                        for s, v in zip(states.tolist(), drawn)])
    if behaviour.network == "vehicle" and Link.WIFI in radios:
        depot = _at_depot(p, seed, ids, t, offset_h)
        code = np.where(depot, gen.WIFI, code)
        if bandwidth:
            depot_u = uniforms(seed, ids, _NETWORK, _DEPOT, _floor(t / 86400.0) + 1).tolist()
            bps = np.where(depot, np.array([_log_uniform(v, p.wifi_bps) for v in depot_u]), bps)
    return code, bps


def _at_depot(p: TraceParams, seed: int, ids: IntArray, t: FloatArray, offset_h: FloatArray) -> BoolArray:
    first_h, last_h = p.depot_hours
    day = _floor(t / 86400.0)
    found = np.zeros(len(ids), dtype=np.bool_)
    for d in (day - 1, day):
        there = uniforms(seed, ids, _NETWORK, _DEPOT, d, 0) < p.depot_wifi_probability
        start_h = 24.0 * d + first_h + offset_h + 0.5 * normals(seed, ids, _NETWORK, _DEPOT, d)
        found |= there & (start_h * 3600.0 <= t) & (t < (start_h + last_h - first_h) * 3600.0)
    return found


def _sessions(p: TraceParams, behaviour: TierBehaviour, seed: int, ids: IntArray, t: FloatArray,
              offset_h: FloatArray) -> list[tuple[tuple[float, float], ...]]:
    """``lazy_battery.sessions`` of every device for its ``t``'s day."""
    day = _floor(t / DAY_S)
    found: list[list[tuple[float, float]]] = [[] for _ in range(len(ids))]
    for d in (day - 2, day - 1, day):
        _add_windows(found, p, behaviour, seed, ids, d, offset_h)
        if behaviour.energy == "nightly":
            _add_plugins(found, p, seed, ids, d)
    return [tuple(sorted(f)) for f in found]


def _add_windows(found: list[list[tuple[float, float]]], p: TraceParams, behaviour: TierBehaviour, seed: int,
                 ids: IntArray, d: IntArray, offset_h: FloatArray) -> None:
    """Each device's bedtime (or harvesting) session of day ``d``, where it has one."""
    has = (uniforms(seed, ids, _BATTERY, _NIGHTLY, d, 0) < p.nightly_probability).tolist()
    if behaviour.energy == "harvest":
        lo, hi = p.harvest_hours
        start_h, length_h = 24.0 * d + lo + offset_h, np.full(len(ids), hi - lo)
    else:
        lo, hi = p.nightly_duration_h
        start_h = 24.0 * d + p.nightly_start_h + offset_h + p.nightly_start_sd_h * normals(
            seed, ids, _BATTERY, _NIGHTLY, d)
        length_h = lo + (hi - lo) * uniforms(seed, ids, _BATTERY, _NIGHTLY, d, 1)
    starts, ends = (start_h * 3600.0).tolist(), ((start_h + length_h) * 3600.0).tolist()
    for i in (i for i, h in enumerate(has) if h):
        found[i].append((starts[i], ends[i]))


def _add_plugins(found: list[list[tuple[float, float]]], p: TraceParams, seed: int, ids: IntArray,
                 d: IntArray) -> None:
    """Each device's Poisson top-ups of day ``d`` (count by inversion of the Poisson CDF)."""
    u, mean = uniforms(seed, ids, _BATTERY, _PLUGIN, d, -1), p.plugins_per_day
    count, prob = np.zeros(len(ids), dtype=np.int64), math.exp(-mean)
    cdf, n = prob, 0
    while n < 50 and bool((u > cdf).any()):  # the scalar loop's steps, taken by every device still above
        n += 1
        count = np.where(u > cdf, n, count)
        prob *= mean / n
        cdf += prob
    lo, hi = p.plugin_duration_s
    for i in range(int(count.max()) if len(ids) else 0):
        some = count > i
        who, day = ids[some], d[some]
        starts = ((day + uniforms(seed, who, _BATTERY, _PLUGIN, day, i)) * DAY_S).tolist()
        lengths = np.maximum(p.step_s, lo + (hi - lo) * uniforms(seed, who, _BATTERY, _PLUGIN, day, i, 1)).tolist()
        for j, k in enumerate(np.flatnonzero(some).tolist()):
            found[k].append((starts[j], starts[j] + lengths[j]))


def _batteries(p: TraceParams, behaviour: TierBehaviour, seed: int, ids: IntArray, t: FloatArray,
               planned: list[tuple[tuple[float, float], ...]], anchors: FloatArray) -> tuple[FloatArray, BoolArray]:
    """``lazy_battery.battery_at`` of every device: its sessions played forward together, one
    session a pass. A user's reaction to a low battery (a top-up session inserted mid-play) is
    held as each device's one extra session; a device that would need a second one while the
    first still waits is played by ``battery_at`` itself."""
    n, nightly = len(ids), behaviour.energy == "nightly"
    starts, ends = _padded(planned)
    lo, hi = p.start_battery
    level, now = lo + (hi - lo) * anchors, (_floor(t / DAY_S) - 1) * DAY_S
    drain = behaviour.drain_per_h / 3600.0 * (0.5 + 3.5 * mean_app_share(p))
    gain = behaviour.charge_per_h / 3600.0
    found, charging = np.zeros(n), np.zeros(n, dtype=np.bool_)
    active, armed, scalar = np.ones(n, dtype=np.bool_), np.full(n, nightly), np.zeros(n, dtype=np.bool_)
    at, rows = np.zeros(n, dtype=np.int64), np.arange(n)
    extra, extra_start, extra_end = np.zeros(n, dtype=np.bool_), np.full(n, np.inf), np.full(n, np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):  # finished devices carry infinities along
        while active.any():
            col = np.minimum(at, starts.shape[1] - 1)  # a finished device may point past its last
            listed_start, listed_end = starts[rows, col], ends[rows, col]
            sooner = (extra_start < listed_start) | ((extra_start == listed_start) & (extra_end < listed_end))
            take_extra = extra & sooner  # the pending sessions' first, as sorted tuples
            start = np.maximum(np.where(take_extra, extra_start, listed_start), now)
            end = np.maximum(np.where(take_extra, extra_end, listed_end), now)
            if nightly and drain > 0:
                low_at = now + np.maximum(0.0, level - p.low_battery) / drain
                hit = active & armed & (low_at < np.minimum(start, t))
                scalar |= hit & extra  # a second reaction while one waits (or is the session popped)
                active &= ~(hit & scalar)
                for i in np.flatnonzero(hit & active).tolist():  # the session popped stays pending
                    key, low = (seed, int(ids[i]), _BATTERY), float(low_at[i])
                    plug = low + _geometric_wait(key, low, p) * p.step_s
                    extra[i], extra_start[i] = True, plug
                    extra_end[i] = plug + _plug_length_s(*key, _REACT, int(low // p.step_s), params=p)
                armed &= ~hit
                moving = active & ~hit
            else:
                moving = active
            at += moving & ~take_extra
            extra &= ~(moving & take_extra)
            before = moving & (t < start)
            found = np.where(before, np.maximum(0.0, level - drain * (t - now)), found)
            drained = np.maximum(0.0, level - drain * (start - now))
            within = moving & ~before & (t < end)
            found, charging = np.where(within, _charged(drained, t - start, gain, p), found), charging | within
            active &= ~(before | within)
            ended = moving & active
            level = np.where(ended, _charged(drained, end - start, gain, p), level)
            now, armed = np.where(ended, end, now), np.where(ended, nightly, armed)
    for i in np.flatnonzero(scalar).tolist():
        found[i], charging[i] = battery_at((seed, int(ids[i]), _BATTERY), float(t[i]), p, behaviour, planned[i],
                                           float(anchors[i]))
    return found, charging


def _padded(planned: list[tuple[tuple[float, float], ...]]) -> tuple[FloatArray, FloatArray]:
    """Session starts and ends, one row per device, padded with infinities (at least one)."""
    lens = np.array([len(s) for s in planned], dtype=np.int64)
    width = int(lens.max(initial=0)) + 1
    starts, ends = np.full((len(planned), width), np.inf), np.full((len(planned), width), np.inf)
    flat = np.array([x for s in planned for x in s], dtype=np.float64).reshape(-1, 2)
    rows = np.repeat(np.arange(len(planned)), lens)
    cols = np.arange(len(rows)) - np.repeat(np.cumsum(lens) - lens, lens)
    starts[rows, cols], ends[rows, cols] = flat[:, 0], flat[:, 1]
    return starts, ends


def _charged(level: FloatArray, duration_s: FloatArray, gain_per_s: float, p: TraceParams) -> FloatArray:
    """``lazy_battery._charged`` elementwise (the same operations in the same order)."""
    taper = p.charge_taper_above
    below = level < taper
    to_taper_s = (taper - level) / gain_per_s
    direct = below & (duration_s <= to_taper_s)
    rest = np.minimum(1.0, np.where(below, taper, level) + gain_per_s / 3.0 * np.where(below, duration_s - to_taper_s,
                                                                                       duration_s))
    return np.where(direct, level + gain_per_s * duration_s, rest)


def _temperature(p: TraceParams, behaviour: TierBehaviour, seed: int, ids: IntArray, t: FloatArray, share: FloatArray,
                 charging: BoolArray) -> FloatArray:
    steady = behaviour.ambient_c + p.ambient_sd_c * normals(seed, ids, _HEAT, -1)
    steady = steady + (p.use_heat_c * np.minimum(share, 1.0) + np.where(charging, p.charging_heat_c, 0.0))
    keep = 1.0 - p.heat_reversion
    stationary_sd = p.heat_noise_c / math.sqrt(1.0 - keep * keep) if keep < 1.0 else p.heat_noise_c
    return steady + stationary_sd * normals(seed, ids, _HEAT, _floor(t / p.step_s))


def _log_uniform(u: float, bounds: tuple[float, float]) -> float:
    return math.exp(math.log(bounds[0]) + u * (math.log(bounds[1]) - math.log(bounds[0])))
