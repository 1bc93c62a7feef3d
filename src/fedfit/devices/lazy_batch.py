"""Lazy device state for many devices at once: :class:`~fedfit.devices.lazy_trace.LazyTrace`'s
``state_at`` for an array of device ids of one profile at one time, in numpy.

The same keyed draws (:func:`~fedfit.devices.counter_rng.uniforms`) and the same float
operations in the same order as the scalar path, so every state equals the one
``LazyTrace(profile, params, seed, device).state_at(t)`` gives, bit for bit. Charge sessions
are drawn into one padded array (a row per device) and played forward together, one session a
pass; only the logarithms and the per-value rounding the scalar path takes through :mod:`math`
stay Python loops over floats. A round's candidates cost a few numpy passes instead of ~40
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
              offset_h: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``lazy_battery.sessions`` of every device for its ``t``'s day: session starts and ends, one
    row per device in the order of the sorted ``(start, end)`` tuples, padded with infinities
    (at least one column). The three days that matter are drawn together (a column each)."""
    day = _floor(t / DAY_S)
    days = np.stack([day - 2, day - 1, day], axis=1)
    starts, ends = _windows(p, behaviour, seed, ids, days, offset_h)
    if behaviour.energy == "nightly":
        plug_starts, plug_ends = _plugins(p, seed, ids, days)
        starts, ends = np.concatenate([starts, plug_starts], axis=1), np.concatenate([ends, plug_ends], axis=1)
    none = np.full((len(ids), 1), np.inf)
    starts, ends = np.concatenate([starts, none], axis=1), np.concatenate([ends, none], axis=1)
    order = np.lexsort((ends, starts))  # along each row: by start, then end (tuple order)
    starts, ends = np.take_along_axis(starts, order, axis=1), np.take_along_axis(ends, order, axis=1)
    width = int(np.isfinite(starts).sum(axis=1).max(initial=0)) + 1
    return starts[:, :width], ends[:, :width]


def _planned(starts: FloatArray, ends: FloatArray, row: int) -> tuple[tuple[float, float], ...]:
    """Row ``row`` of :func:`_sessions` as ``lazy_battery.sessions`` gives it."""
    return tuple((s, e) for s, e in zip(starts[row].tolist(), ends[row].tolist()) if s != math.inf)


def _windows(p: TraceParams, behaviour: TierBehaviour, seed: int, ids: IntArray, days: IntArray,
             offset_h: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Each device's bedtime (or harvesting) session of each of its ``days`` (a row per device,
    a column per day; infinities on a day without one)."""
    keys, offset = ids[:, None], offset_h[:, None]
    has = uniforms(seed, keys, _BATTERY, _NIGHTLY, days, 0) < p.nightly_probability
    if behaviour.energy == "harvest":
        lo, hi = p.harvest_hours
        start_h, length_h = 24.0 * days + lo + offset, np.full(days.shape, hi - lo)
    else:
        lo, hi = p.nightly_duration_h
        start_h = 24.0 * days + p.nightly_start_h + offset + p.nightly_start_sd_h * normals(
            seed, keys, _BATTERY, _NIGHTLY, days)
        length_h = lo + (hi - lo) * uniforms(seed, keys, _BATTERY, _NIGHTLY, days, 1)
    return np.where(has, start_h * 3600.0, np.inf), np.where(has, (start_h + length_h) * 3600.0, np.inf)


def _plugins(p: TraceParams, seed: int, ids: IntArray, days: IntArray) -> tuple[FloatArray, FloatArray]:
    """Each device's Poisson top-ups of each of its ``days`` (count by inversion of the Poisson
    CDF): starts and ends, a row per device (infinities where it has fewer than the most)."""
    u, mean = uniforms(seed, ids[:, None], _BATTERY, _PLUGIN, days, -1), p.plugins_per_day
    count, prob = np.zeros(days.shape, dtype=np.int64), math.exp(-mean)
    cdf, n = prob, 0
    while n < 50 and bool((u > cdf).any()):  # the scalar loop's steps, taken by every device still above
        n += 1
        count = np.where(u > cdf, n, count)
        prob *= mean / n
        cdf += prob
    counts = count.ravel()  # row-major: device by device, its days in order
    total = int(counts.sum())
    who, day = np.repeat(np.repeat(ids, days.shape[1]), counts), np.repeat(days.ravel(), counts)
    i = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)  # the top-up's index in its day
    lo, hi = p.plugin_duration_s
    start = (day + uniforms(seed, who, _BATTERY, _PLUGIN, day, i)) * DAY_S
    length = np.maximum(p.step_s, lo + (hi - lo) * uniforms(seed, who, _BATTERY, _PLUGIN, day, i, 1))
    per_device = count.sum(axis=1)
    rows = np.repeat(np.arange(len(ids)), per_device)
    cols = np.arange(total) - np.repeat(np.cumsum(per_device) - per_device, per_device)
    starts = np.full((len(ids), int(per_device.max(initial=0))), np.inf)
    ends = np.full(starts.shape, np.inf)
    starts[rows, cols], ends[rows, cols] = start, start + length
    return starts, ends


def _batteries(p: TraceParams, behaviour: TierBehaviour, seed: int, ids: IntArray, t: FloatArray,
               planned: tuple[FloatArray, FloatArray], anchors: FloatArray) -> tuple[FloatArray, BoolArray]:
    """``lazy_battery.battery_at`` of every device: its sessions (:func:`_sessions`) played
    forward together, one session a pass. A user's reaction to a low battery (a top-up session
    inserted mid-play) is held as each device's one extra session; a device that would need a
    second one while the first still waits is played by ``battery_at`` itself."""
    n, nightly = len(ids), behaviour.energy == "nightly"
    starts, ends = planned
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
                react = np.flatnonzero(hit & active)  # the session popped stays pending
                if len(react):
                    extra[react] = True
                    extra_start[react], extra_end[react] = _reactions(p, seed, ids[react], low_at[react])
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
        found[i], charging[i] = battery_at((seed, int(ids[i]), _BATTERY), float(t[i]), p, behaviour,
                                           _planned(starts, ends, i), float(anchors[i]))
    return found, charging


def _reactions(p: TraceParams, seed: int, ids: IntArray, low_at: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The top-up session (start, end) each device plugs in for after its battery fell low at
    ``low_at`` (``lazy_battery``'s geometric wait and plug length, the keyed draws together)."""
    lows = low_at.tolist()
    step = np.array([int(x // p.step_s) for x in lows], dtype=np.int64)
    waits = _geometric_waits(p, uniforms(seed, ids, _BATTERY, _REACT, step, 2))
    plugs = [x + w * p.step_s for x, w in zip(lows, waits)]
    lo, hi = p.plugin_duration_s
    lengths = uniforms(seed, ids, _BATTERY, _REACT, step).tolist()
    return np.array(plugs), np.array([x + max(p.step_s, lo + (hi - lo) * u) for x, u in zip(plugs, lengths)])


def _geometric_waits(p: TraceParams, drawn: FloatArray) -> list[int]:
    """``lazy_battery._geometric_wait`` of each keyed uniform ``drawn``."""
    chance = p.low_battery_plug_per_step
    if chance >= 1.0:
        return [1] * len(drawn)
    if chance <= 0.0:
        return [1 << 30] * len(drawn)
    return [max(1, math.ceil(math.log(1.0 - u) / math.log(1.0 - chance))) for u in drawn.tolist()]


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
