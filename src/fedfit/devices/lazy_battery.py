"""A lazily computed battery: level and charging at time t from the charge sessions near t.

Charge sessions are keyed by day (:mod:`fedfit.devices.counter_rng`): ``nightly`` devices have
a bedtime session most nights (``nightly_*``) and Poisson random top-ups (``plugins_per_day``,
``plugin_duration_s``); ``harvest`` devices harvest through ``harvest_hours`` on most days.
The level at ``t`` is found by playing the sessions forward from an anchor at local midnight
the day before ``t``'s day, where the level is drawn from ``start_battery``. Between sessions
the battery drains at ``drain_per_h * (0.5 + 3.5 * mean app share)`` per hour; in a session it
gains ``charge_per_h`` (a third of that above ``charge_taper_above``), as the array generator
does. A ``nightly`` user whose level falls below ``low_battery`` plugs in after a geometric
wait (``low_battery_plug_per_step`` per step) for a random top-up.

The anchor moves at midnight, so the level can jump there when no session since the
previous midnight reset it to full (rare: a bedtime session most nights charges to full).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

from fedfit.devices.counter_rng import FloatArray, logs, normal, uniform
from fedfit.devices.trace_params import TierBehaviour, TraceParams

DAY_S = 86400.0
_NIGHTLY, _PLUGIN, _REACT, _ANCHOR = 1, 2, 3, 4
_LOOKBACK_DAYS = 1


def mean_app_share(params: TraceParams) -> float:
    """Long-run mean share of training memory taken by apps (the drain's use factor)."""
    p_on = params.app_mean_on_s / (params.app_mean_on_s + params.app_mean_off_s)
    return params.app_slots * p_on * (params.app_share[0] + params.app_share[1]) / 2.0


def _daily_window(key: tuple[int, ...], day: int, params: TraceParams, offset_h: float,
                  behaviour: TierBehaviour) -> tuple[float, float] | None:
    """The day's bedtime (or harvesting) session in seconds, or ``None`` on a day without one."""
    if uniform(*key, _NIGHTLY, day, 0) >= params.nightly_probability:
        return None
    if behaviour.energy == "harvest":
        lo, hi = params.harvest_hours
        start_h, length_h = 24.0 * day + lo + offset_h, hi - lo
    else:
        lo, hi = params.nightly_duration_h
        start_h = 24.0 * day + params.nightly_start_h + offset_h + params.nightly_start_sd_h * normal(*key, _NIGHTLY, day)
        length_h = lo + (hi - lo) * uniform(*key, _NIGHTLY, day, 1)
    return start_h * 3600.0, (start_h + length_h) * 3600.0


def _plug_length_s(*keys: int, params: TraceParams) -> float:
    lo, hi = params.plugin_duration_s
    return max(params.step_s, lo + (hi - lo) * uniform(*keys))


def _random_plugins(key: tuple[int, ...], day: int, params: TraceParams) -> list[tuple[float, float]]:
    """The day's Poisson top-up sessions (count by inversion of the Poisson CDF)."""
    count = int(poisson_counts(np.array([uniform(*key, _PLUGIN, day, -1)]), params.plugins_per_day)[0])
    sessions = []
    for i in range(count):
        start = (day + uniform(*key, _PLUGIN, day, i)) * DAY_S
        sessions.append((start, start + _plug_length_s(*key, _PLUGIN, day, i, 1, params=params)))
    return sessions


def poisson_counts(u: FloatArray, mean: float) -> npt.NDArray[np.int64]:
    """Poisson(``mean``) counts by inversion of its CDF at uniforms ``u`` (any shape): for each,
    the first count (at most 50) whose CDF reaches it (the scalar and batch paths' one formula)."""
    return np.searchsorted(_poisson_cdf(mean), u, side="left").astype(np.int64)


@functools.lru_cache(maxsize=16)
def _poisson_cdf(mean: float) -> FloatArray:
    """The Poisson(``mean``) CDF at 0, 1, ..., 49 (summed term by term, as the inversion's loop did)."""
    prob = math.exp(-mean)
    cdf = [prob]
    for n in range(1, 50):
        prob *= mean / n
        cdf.append(cdf[-1] + prob)
    table = np.array(cdf)
    table.flags.writeable = False
    return table


def sessions(key: tuple[int, ...], day: int, params: TraceParams, behaviour: TierBehaviour,
             offset_h: float) -> tuple[tuple[float, float], ...]:
    """Planned charge sessions ``(start_s, end_s)`` that can matter on ``day``, sorted by start."""
    found = []
    for d in range(day - _LOOKBACK_DAYS - 1, day + 1):
        window = _daily_window(key, d, params, offset_h, behaviour)
        if window is not None:
            found.append(window)
        if behaviour.energy == "nightly":
            found += _random_plugins(key, d, params)
    return tuple(sorted(found))


def _charged(level: float, duration_s: float, gain_per_s: float, params: TraceParams) -> float:
    """Level after charging ``duration_s`` from ``level`` (a third of the rate above the taper)."""
    taper = params.charge_taper_above
    if level < taper:
        to_taper_s = (taper - level) / gain_per_s
        if duration_s <= to_taper_s:
            return level + gain_per_s * duration_s
        level, duration_s = taper, duration_s - to_taper_s
    return min(1.0, level + gain_per_s / 3.0 * duration_s)


def battery_at(key: tuple[int, ...], t_s: float, params: TraceParams, behaviour: TierBehaviour,
               planned: tuple[tuple[float, float], ...], anchor_u: float | None = None) -> tuple[float, bool]:
    """``(level, charging)`` at virtual time ``t_s`` (a grid step's start).

    Args:
        key: (seed, device id, stream) of the device's battery.
        t_s: virtual seconds.
        params: generator parameters.
        behaviour: the tier's behaviour.
        planned: :func:`sessions` of ``t_s``'s day.
        anchor_u: the anchor level's keyed uniform when the caller drew it already (a batch).
    """
    day = math.floor(t_s / DAY_S)
    now = (day - _LOOKBACK_DAYS) * DAY_S
    lo, hi = params.start_battery
    if anchor_u is None:
        anchor_u = uniform(*key, _ANCHOR, day - _LOOKBACK_DAYS)
    level = lo + (hi - lo) * anchor_u
    drain = behaviour.drain_per_h / 3600.0 * (0.5 + 3.5 * mean_app_share(params))
    gain = behaviour.charge_per_h / 3600.0
    pending = list(planned)
    armed = behaviour.energy == "nightly"  # a user reacts to a low battery once per discharge
    while True:
        start, end = pending.pop(0) if pending else (math.inf, math.inf)
        start, end = max(start, now), max(end, now)
        if armed and drain > 0:
            low_at = now + max(0.0, level - params.low_battery) / drain
            if low_at < min(start, t_s):
                pending = sorted([*pending, (start, end), reaction(key, low_at, params)])
                armed = False
                continue
        if t_s < start:
            return max(0.0, level - drain * (t_s - now)), False
        level = max(0.0, level - drain * (start - now))
        if t_s < end:
            return _charged(level, t_s - start, gain, params), True
        level, now = _charged(level, end - start, gain, params), end
        armed = behaviour.energy == "nightly"


def reaction(key: tuple[int, ...], low_at_s: float, params: TraceParams) -> tuple[float, float]:
    """The top-up session ``(start, end)`` one device plugs in for after its battery fell low at
    ``low_at_s`` (:func:`top_ups` with its two keyed draws made one by one)."""
    at = np.array([low_at_s])
    step = int(reaction_steps(at, params)[0])
    plug, unplug = top_ups(at, np.array([uniform(*key, _REACT, step, 2)]),
                           np.array([uniform(*key, _REACT, step)]), params)
    return float(plug[0]), float(unplug[0])


def reaction_steps(low_at_s: FloatArray, params: TraceParams) -> npt.NDArray[np.int64]:
    """The grid step (the keys of its draws) of each time ``low_at_s`` a battery fell low."""
    return np.floor_divide(low_at_s, params.step_s).astype(np.int64)


def top_ups(low_at_s: FloatArray, wait_u: FloatArray, length_u: FloatArray,
            params: TraceParams) -> tuple[FloatArray, FloatArray]:
    """The top-up sessions ``(starts, ends)`` users plug in for after their batteries fell low at
    ``low_at_s``: a geometric wait (``low_battery_plug_per_step`` a step, at least one step, by
    inversion of uniforms ``wait_u``), then a plug length drawn from ``plugin_duration_s`` by
    ``length_u`` (the scalar and batch paths' one formula)."""
    chance = params.low_battery_plug_per_step
    if chance >= 1.0:
        waits = np.ones(len(low_at_s))
    elif chance <= 0.0:
        waits = np.full(len(low_at_s), float(1 << 30))
    else:
        waits = np.maximum(1.0, np.ceil(logs(1.0 - wait_u) / logs(1.0 - chance)))
    plugs = low_at_s + waits * params.step_s
    lo, hi = params.plugin_duration_s
    return plugs, plugs + np.maximum(params.step_s, lo + (hi - lo) * length_u)
