"""Seeded generators of one device's dynamic resources, as arrays on a fixed step grid.

Each generator takes its own ``numpy.random.Generator`` (``default_rng([seed, device_id, k])``
with one ``k`` per generator, see :mod:`fedfit.devices.traces`) plus any upstream arrays, so a
trace is a pure function of (profile, params, seed, device id). Index ``i`` covers virtual time
``[i * step_s, (i + 1) * step_s)``. A device's daily habits run ``offset_h`` hours after the
nominal clock (see :func:`habit_offset_h`).

Processes are built from *spells* (runs of constant state with geometric lengths), which keeps
the Python loops to one iteration per spell rather than per step.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from fedfit.devices.trace_params import TierBehaviour, TraceParams
from fedfit.types import Link

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

#: Link codes stored in traces: index into this tuple.
LINKS: tuple[Link, ...] = (Link.WIFI, Link.CELLULAR, Link.OFFLINE)
WIFI, CELLULAR, OFFLINE = 0, 1, 2

# Mobile chain states: Wi-Fi, good cellular, poor cellular, offline. Mean dwell in minutes
# (home/office Wi-Fi spells of hours, commutes of tens of minutes, short dead zones) and
# where a spell goes next (rows sum to 1, no self-jumps).
_MOBILE_DWELL_MIN = np.array([120.0, 40.0, 10.0, 15.0])
_MOBILE_NEXT = np.array(
    [
        [0.0, 0.8, 0.1, 0.1],
        [0.6, 0.0, 0.3, 0.1],
        [0.2, 0.6, 0.0, 0.2],
        [0.5, 0.4, 0.1, 0.0],
    ]
)
# Low-band sensor chain: in coverage (hours) or in a gap (tens of minutes).
_LOWBAND_DWELL_MIN = np.array([360.0, 30.0])


def spell_length(rng: np.random.Generator, mean_steps: float) -> int:
    """A geometric spell length (>= 1 step) with mean ``max(mean_steps, 1)``."""
    return int(rng.geometric(1.0 / max(mean_steps, 1.0)))


def habit_offset_h(rng: np.random.Generator, params: TraceParams) -> float:
    """A device's shift of its daily habits, in hours."""
    return float(rng.normal(0.0, params.habit_sd_h))


def daily_windows(
    rng: np.random.Generator,
    n: int,
    params: TraceParams,
    offset_h: float,
    *,
    start_h: float,
    start_sd_h: float,
    duration_h: tuple[float, float],
    probability: float,
) -> list[tuple[int, int]]:
    """One window a day (with ``probability``) as ``(first_step, end_step)``, clipped to the grid.

    Day ``d``'s window starts at ``24 d + start_h + offset_h + N(0, start_sd_h)`` hours and lasts
    ``U(duration_h)`` hours; day -1 is included so a window running past midnight covers t = 0.
    """
    days = math.ceil(n * params.step_s / 86400.0)
    windows = []
    for day in range(-1, days + 1):
        happens = rng.random() < probability
        start = 24.0 * day + start_h + offset_h + rng.normal(0.0, 1.0) * start_sd_h
        end = start + rng.uniform(*duration_h)
        first = max(0, math.ceil(start * 3600.0 / params.step_s))
        last = min(n, math.ceil(end * 3600.0 / params.step_s))
        if happens and first < last:
            windows.append((first, last))
    return windows


def app_memory_share(rng: np.random.Generator, n: int, params: TraceParams) -> FloatArray:
    """Share of the granted training memory held by running apps at each step (may exceed 1).

    Each of ``params.app_slots`` apps alternates running and stopped spells; a running spell
    holds a share drawn from ``params.app_share``.
    """
    share = np.zeros(n)
    # spell_length's draws inlined (one spell per iteration: the call overhead was most of it);
    # a slot's spells are filled in at once: 0.0 where it is stopped (x + 0.0 is x, bit for bit)
    geometric, uniform, (low, high) = rng.geometric, rng.uniform, params.app_share
    p_end_on = 1.0 / max(params.app_mean_on_s / params.step_s, 1.0)
    p_end_off = 1.0 / max(params.app_mean_off_s / params.step_s, 1.0)
    p_on = params.app_mean_on_s / (params.app_mean_on_s + params.app_mean_off_s)
    for _ in range(params.app_slots):
        start, running = 0, bool(rng.random() < p_on)
        lengths: list[int] = []
        values: list[float] = []
        while start < n:
            length = int(geometric(p_end_on if running else p_end_off))
            lengths.append(length)
            values.append(uniform(low, high) if running else 0.0)
            start, running = start + length, not running
        share += np.repeat(values, lengths)[:n]
    return share


def _chain(
    rng: np.random.Generator, n: int, dwell_steps: FloatArray, next_p: FloatArray
) -> list[tuple[int, int, int]]:
    """Spells ``(start, length, state)`` of a Markov chain started from its dwell-weighted mix."""
    stationary = _chain_occupancy(dwell_steps, next_p)
    state = int(rng.choice(len(dwell_steps), p=stationary))
    spells, start = [], 0
    while start < n:
        length = min(spell_length(rng, float(dwell_steps[state])), n - start)
        spells.append((start, length, state))
        start += length
        state = int(rng.choice(len(dwell_steps), p=next_p[state]))
    return spells


def _chain_occupancy(dwell_steps: FloatArray, next_p: FloatArray) -> FloatArray:
    """Long-run share of time per state: jump-chain stationary law weighted by dwell."""
    if len(dwell_steps) == 1:
        return np.ones(1)
    values, vectors = np.linalg.eig(next_p.T)
    visits = np.abs(np.real(vectors[:, int(np.argmin(np.abs(values - 1.0)))]))
    occupancy = visits * dwell_steps
    return np.asarray(occupancy / occupancy.sum(), dtype=np.float64)


def _draw_bps(rng: np.random.Generator, bounds: tuple[float, float]) -> float:
    """Log-uniform bandwidth in ``bounds``."""
    return float(math.exp(rng.uniform(math.log(bounds[0]), math.log(bounds[1]))))


def network(
    rng: np.random.Generator,
    n: int,
    params: TraceParams,
    behaviour: TierBehaviour,
    radios: tuple[Link, ...],
    offset_h: float,
) -> tuple[IntArray, FloatArray]:
    """Link codes (into :data:`LINKS`) and bandwidth in bit/s per step; 0 bit/s when offline.

    Bandwidth is drawn once per spell. ``mobile``: the four-state chain above, a device without
    cellular is offline where the chain says cellular and one without Wi-Fi is on cellular
    where it says Wi-Fi. ``vehicle``: the chain without Wi-Fi on the road, plus depot Wi-Fi
    each night. ``lowband``: in coverage at ``lowband_bps`` or in a gap.
    """
    link = np.full(n, OFFLINE, dtype=np.int64)
    bps = np.zeros(n)
    for first, end, code, bounds in _spells(rng, n, params, behaviour, radios):
        link[first:end] = code
        bps[first:end] = 0.0 if bounds is None else _draw_bps(rng, bounds)
    if behaviour.network == "vehicle" and Link.WIFI in radios:
        depot_h = params.depot_hours
        for first, end in daily_windows(
            rng, n, params, offset_h, start_h=depot_h[0], start_sd_h=0.5,
            duration_h=(depot_h[1] - depot_h[0],) * 2, probability=params.depot_wifi_probability,
        ):
            link[first:end] = WIFI
            bps[first:end] = _draw_bps(rng, params.wifi_bps)
    return link, bps


Spell = tuple[int, int, int, "tuple[float, float] | None"]


def _spells(
    rng: np.random.Generator,
    n: int,
    params: TraceParams,
    behaviour: TierBehaviour,
    radios: tuple[Link, ...],
) -> list[Spell]:
    """Link spells ``(first, end, link code, bandwidth bounds or None when offline)``."""
    if behaviour.network == "lowband":
        dwell, next_p = _LOWBAND_DWELL_MIN, np.array([[0.0, 1.0], [1.0, 0.0]])
    else:
        dwell, next_p = _MOBILE_DWELL_MIN, _MOBILE_NEXT
    spells: list[Spell] = []
    for first, length, state in _chain(rng, n, dwell * 60.0 / params.step_s, next_p):
        if behaviour.network == "lowband":
            code, bounds = (CELLULAR, params.lowband_bps) if state == 0 else (OFFLINE, None)
        else:
            if behaviour.network == "vehicle" and state == 0:
                state = 1  # no Wi-Fi on the road
            code, bounds = _mobile_link(state, radios, params)
        if code == CELLULAR and Link.CELLULAR not in radios:
            code, bounds = OFFLINE, None
        spells.append((first, first + length, code, bounds))
    return spells


def _mobile_link(
    state: int, radios: tuple[Link, ...], params: TraceParams
) -> tuple[int, tuple[float, float] | None]:
    """Link code and bandwidth bounds of a mobile-chain state on a device with ``radios``."""
    if state == 0 and Link.WIFI in radios:
        return WIFI, params.wifi_bps
    if state in (0, 1):
        return CELLULAR, params.cellular_bps
    if state == 2:
        return CELLULAR, params.poor_cellular_bps
    return OFFLINE, None


def availability(
    rng: np.random.Generator, n: int, params: TraceParams, behaviour: TierBehaviour, offset_h: float
) -> BoolArray:
    """Whether the device is idle and willing, per step (before link and battery are checked).

    Willing and busy spells alternate; a willing spell lasts ``online_mean_run_s`` on average
    and the busy spell after it is sized so that the long-run willing share at local hour
    ``h`` is ``day + (night - day) * (1 + cos(2 pi (h - 3) / 24)) / 2``: ``online_night`` at
    03:00, ``online_day`` at 15:00.
    """
    willing = np.zeros(n, dtype=np.bool_)
    on_steps = params.online_mean_run_s / params.step_s
    geometric = rng.geometric
    start, on = 0, bool(rng.random() < _willing_share(behaviour, -offset_h))
    while start < n:
        share = _willing_share(behaviour, start * params.step_s / 3600.0 - offset_h)
        mean = on_steps if on else on_steps * (1.0 - share) / share
        length = int(geometric(1.0 / max(mean, 1.0)))  # spell_length, inlined
        willing[start : start + length] = on
        start, on = start + length, not on
    return willing


def _willing_share(behaviour: TierBehaviour, hour: float) -> float:
    day, night = behaviour.online_day, behaviour.online_night
    share = day + (night - day) * (1.0 + math.cos(2.0 * math.pi * (hour - 3.0) / 24.0)) / 2.0
    return min(max(share, 0.01), 0.99)
