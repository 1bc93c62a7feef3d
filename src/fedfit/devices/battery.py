"""Seeded battery, charging and heat generators (arrays on the step grid of a trace).

Same conventions as :mod:`fedfit.devices.generators`: each function takes its own random
generator and upstream arrays, index ``i`` is the state at the start of step ``i``.
"""

from __future__ import annotations

import math

import numpy as np

from fedfit.devices.generators import BoolArray, FloatArray, daily_windows
from fedfit.devices.trace_params import TierBehaviour, TraceParams


def planned_charging(
    rng: np.random.Generator, n: int, params: TraceParams, behaviour: TierBehaviour, offset_h: float
) -> BoolArray:
    """Charging sessions known in advance: habits, not reactions to a low battery.

    ``nightly``: a bedtime session most nights plus Poisson random top-ups
    (``plugins_per_day``); ``harvest``: harvesting through the working hours of most days.
    """
    plan = np.zeros(n, dtype=np.bool_)
    if behaviour.energy == "harvest":
        lo, hi = params.harvest_hours
        windows = daily_windows(
            rng, n, params, offset_h, start_h=lo, start_sd_h=0.0,
            duration_h=(hi - lo, hi - lo), probability=params.nightly_probability,
        )
    else:
        windows = daily_windows(
            rng, n, params, offset_h, start_h=params.nightly_start_h,
            start_sd_h=params.nightly_start_sd_h, duration_h=params.nightly_duration_h,
            probability=params.nightly_probability,
        )
        windows += _random_plugins(rng, n, params)
    for first, end in windows:
        plan[first:end] = True
    return plan


def _random_plugins(rng: np.random.Generator, n: int, params: TraceParams) -> list[tuple[int, int]]:
    days = n * params.step_s / 86400.0
    count = int(rng.poisson(params.plugins_per_day * days))
    starts = rng.integers(0, n, size=count)
    lengths = [_plug_steps(rng, params) for _ in range(count)]
    return [(int(s), min(n, int(s) + length)) for s, length in zip(starts, lengths, strict=True)]


def _plug_steps(rng: np.random.Generator, params: TraceParams) -> int:
    return max(1, math.ceil(rng.uniform(*params.plugin_duration_s) / params.step_s))


def battery(
    rng: np.random.Generator,
    plan: BoolArray,
    share: FloatArray,
    params: TraceParams,
    behaviour: TierBehaviour,
) -> tuple[FloatArray, BoolArray]:
    """Battery fraction in [0, 1] and the charging flag per step.

    Not charging, the battery drains ``drain_per_h * (0.5 + 3.5 * share)`` per hour (``share``,
    the apps' memory share, stands for use; ~1x at the mean share). Charging, it gains
    ``charge_per_h`` per hour, a third of that above ``charge_taper_above``. With ``nightly``
    energy a user below ``low_battery`` plugs in with ``low_battery_plug_per_step`` chance per
    step for a random top-up session.
    """
    n = len(plan)
    step_h = params.step_s / 3600.0
    drain = behaviour.drain_per_h * step_h * (0.5 + 3.5 * share)
    gain = behaviour.charge_per_h * step_h
    reacts = behaviour.energy == "nightly"
    chances = rng.random(n)
    level = float(rng.uniform(*params.start_battery))
    charging = plan.copy()
    levels = np.empty(n)
    for i in range(n):
        levels[i] = level
        if reacts and not charging[i] and level < params.low_battery:
            if chances[i] < params.low_battery_plug_per_step:
                charging[i : i + _plug_steps(rng, params)] = True
        if charging[i]:
            taper = 1.0 / 3.0 if level > params.charge_taper_above else 1.0
            level = min(1.0, level + gain * taper)
        else:
            level = max(0.0, level - float(drain[i]))
    return levels, charging


def temperature(
    rng: np.random.Generator,
    charging: BoolArray | None,
    share: FloatArray,
    params: TraceParams,
    behaviour: TierBehaviour,
) -> FloatArray:
    """Device temperature in °C per step: a mean-reverting walk towards a moving steady value.

    Steady value: the device's resting temperature (``ambient_c`` plus ``N(0, ambient_sd_c)``)
    plus ``charging_heat_c`` while charging from a charger (harvesting trickles too little to
    heat) plus ``use_heat_c * min(share, 1)``. Each step closes ``heat_reversion`` of the gap
    and adds ``N(0, heat_noise_c)``. (:func:`heat_inputs` then :func:`heat_walk`.)
    """
    steady, noise = heat_inputs(rng, charging, share, params, behaviour)
    return heat_walk(steady, noise, params)


def heat_inputs(
    rng: np.random.Generator,
    charging: BoolArray | None,
    share: FloatArray,
    params: TraceParams,
    behaviour: TierBehaviour,
) -> tuple[FloatArray, FloatArray]:
    """The steady value and the noise of :func:`temperature` per step (all its random draws)."""
    n = len(share)
    resting = behaviour.ambient_c + float(rng.normal(0.0, params.ambient_sd_c))
    steady = resting + params.use_heat_c * np.minimum(share, 1.0)
    if charging is not None and behaviour.energy == "nightly":
        steady = steady + params.charging_heat_c * charging
    return steady, rng.normal(0.0, params.heat_noise_c, size=n)


def heat_walk(steady: FloatArray, noise: FloatArray, params: TraceParams) -> FloatArray:
    """:func:`temperature`'s walk over ``steady`` and ``noise``: one device's ``(n,)`` arrays, or
    ``(devices, n)`` rows walked all at once (column by column, the same float operations per
    device, so each row equals its device's walk bit for bit)."""
    if steady.ndim == 2:
        return _heat_walk_rows(steady, noise, params.heat_reversion)
    n = len(steady)
    temps = np.empty(n)
    current = float(steady[0])
    for i in range(n):
        temps[i] = current
        current += params.heat_reversion * (float(steady[i]) - current) + float(noise[i])
    return temps


def _heat_walk_rows(steady: FloatArray, noise: FloatArray, reversion: float) -> FloatArray:
    cols_steady, cols_noise = np.ascontiguousarray(steady.T), np.ascontiguousarray(noise.T)
    temps = np.empty_like(cols_steady)
    current = cols_steady[0].copy()
    gap = np.empty_like(current)
    for i in range(len(cols_steady)):
        temps[i] = current
        np.subtract(cols_steady[i], current, out=gap)  # current += reversion * (steady - current) + noise
        gap *= reversion
        gap += cols_noise[i]
        current += gap
    return np.ascontiguousarray(temps.T)
