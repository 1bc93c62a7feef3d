"""Lazy device state: a device's state at time t computed on demand, nothing stored per step.

:class:`LazyTrace` answers ``state_at(t)`` from (seed, device id, t) and its tier's
:class:`~fedfit.devices.trace_params.TraceParams` alone, through keyed uniforms
(:mod:`fedfit.devices.counter_rng`) per process and time block. A device costs a few dozen
bytes (this object) instead of the ~140 KiB of 48 h of per-step arrays a
:class:`~fedfit.devices.traces.DeviceTrace` holds, has no horizon (no wrap) and is built in
microseconds. Time is read on the ``step_s`` grid, as the arrays are.

The processes keep the array generator's long-run laws, not its sample paths (a different
random scheme): apps alternate running and stopped in cycles of ``app_mean_on_s +
app_mean_off_s`` (running the first ``app_mean_on_s`` of each, from a per-app phase) holding a
share drawn per cycle from ``app_share``; availability is drawn per ``online_mean_run_s``
block with the diurnal willing share; the link is drawn per 30-minute block from the link
chain's long-run occupancy (bandwidth per block), plus the vehicle's nightly depot Wi-Fi;
the battery follows :mod:`fedfit.devices.lazy_battery`; the temperature is its steady value
plus the reverting walk's stationary noise.

>>> from fedfit.devices.catalogue import tier
>>> trace = LazyTrace(tier("smartwatch"), TraceParams(), seed=1, device_id=7)
>>> trace.state_at(3600.0) == LazyTrace(tier("smartwatch"), TraceParams(), seed=1, device_id=7).state_at(3600.0)
True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from fedfit.devices import generators as gen
from fedfit.devices.counter_rng import FloatArray, cosines, exps, logs, normal, uniform
from fedfit.devices.lazy_battery import DAY_S, battery_at, sessions
from fedfit.devices.trace_params import TierBehaviour, TraceParams
from fedfit.devices.consumption import with_consumption
from fedfit.devices.traces import thermal_of
from fedfit.types import DeviceProfile, DeviceState, Link

_HABITS, _MEMORY, _NETWORK, _AVAILABILITY, _BATTERY, _HEAT = range(6)
#: Seconds per block of the lazily drawn link.
LINK_BLOCK_S = 1800.0
_DEPOT = -7


def _occupancy_cdf(dwell_min: gen.FloatArray, next_p: gen.FloatArray) -> tuple[float, ...]:
    occupancy = gen._chain_occupancy(dwell_min, next_p)
    return tuple(float(c) for c in np.cumsum(occupancy))


_MOBILE_CDF = _occupancy_cdf(gen._MOBILE_DWELL_MIN, gen._MOBILE_NEXT)
_LOWBAND_IN_COVERAGE = float(gen._LOWBAND_DWELL_MIN[0] / gen._LOWBAND_DWELL_MIN.sum())


@dataclasses.dataclass(frozen=True, slots=True)
class LazyTrace:
    """One device's state over virtual time, computed on demand (implements ``StateTrace``).

    Attributes:
        profile: the device's static profile; its tier picks the behaviour.
        params: generator parameters (shared by the fleet).
        seed: experiment seed (>= 0).
        device_id: the device (>= 0); different ids give independent states.
    """

    profile: DeviceProfile
    params: TraceParams
    seed: int
    device_id: int
    # Values drawn once per device (habit offset, resting temperature, phases) and the charge
    # sessions of the last day asked for: a cache of pure functions, not state.
    _memo: dict[object, object] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.seed < 0 or self.device_id < 0:
            raise ValueError(f"seed and device_id must be >= 0, got {self.seed}, {self.device_id}")

    def _key(self, stream: int) -> tuple[int, int, int]:
        return self.seed, self.device_id, stream

    def _drawn(self, name: str, draw: Callable[[], float]) -> float:
        value = self._memo.get(name)
        if value is None:
            value = self._memo[name] = draw()
        assert isinstance(value, float)
        return value

    def offset_h(self) -> float:
        """The device's shift of its daily habits, in hours."""
        return self._drawn("offset_h", lambda: self.params.habit_sd_h * normal(*self._key(_HABITS)))

    def _sessions(self, day: int, behaviour: TierBehaviour) -> tuple[tuple[float, float], ...]:
        cached = self._memo.get("sessions")
        if isinstance(cached, tuple) and cached[0] == day:
            return cached[1]
        found = sessions(self._key(_BATTERY), day, self.params, behaviour, self.offset_h())
        self._memo["sessions"] = (day, found)
        return found

    def state_at(self, t_s: float, consumed_j: float = 0.0) -> DeviceState:
        """The device's state at virtual time ``t_s`` (read at its grid step's start).

        Args:
            t_s: virtual seconds since the start (>= 0).
            consumed_j: training energy to take off the battery (see ``with_consumption``).

        Raises:
            ValueError: ``t_s`` is negative or not finite.
        """
        if not math.isfinite(t_s) or t_s < 0:
            raise ValueError(f"virtual time must be finite and >= 0, got {t_s!r}")
        t = math.floor(t_s / self.params.step_s) * self.params.step_s
        last = self._memo.get("state")
        if isinstance(last, tuple) and last[0] == t:
            state: DeviceState = last[1]
        else:
            state = self._state(t)
            self._memo["state"] = (t, state)
        return with_consumption(state, self.profile, consumed_j)

    def online_at(self, t_s: float) -> bool:
        """``state_at(t_s).online``, computed without the memory, heat and bandwidth draws."""
        t = math.floor(t_s / self.params.step_s) * self.params.step_s
        last = self._memo.get("state")
        if isinstance(last, tuple) and last[0] == t:
            return bool(last[1].online)
        behaviour, offset_h = self.params.behaviour(self.profile.tier), self.offset_h()
        if not self._willing(t, behaviour, offset_h) or self._link(t, behaviour, offset_h)[0] is Link.OFFLINE:
            return False
        if self.profile.battery_capacity_j is None:
            return True
        planned = self._sessions(math.floor(t / DAY_S), behaviour)
        return battery_at(self._key(_BATTERY), t, self.params, behaviour, planned)[0] > 0

    def _state(self, t: float) -> DeviceState:
        """The state at grid time ``t``, before any training consumption."""
        p = self.params
        behaviour, offset_h = p.behaviour(self.profile.tier), self.offset_h()
        share = self._app_share(t)
        link, bps = self._link(t, behaviour, offset_h)
        online = self._willing(t, behaviour, offset_h) and link is not Link.OFFLINE
        level: float | None = None
        charging: bool | None = None
        if self.profile.battery_capacity_j is not None:
            planned = self._sessions(math.floor(t / DAY_S), behaviour)
            level, charging = battery_at(self._key(_BATTERY), t, p, behaviour, planned)
            online = online and level > 0
        temp = self._temperature(t, share, bool(charging) and behaviour.energy == "nightly", behaviour)
        return DeviceState(
            free_memory_bytes=math.floor(self.profile.training_memory_bytes * min(max(1.0 - share, 0.0), 1.0)),
            battery_fraction=level, charging=charging, temperature_c=temp, thermal=thermal_of(temp, p),
            link=link, bandwidth_bps=bps, online=online,
            cpu_utilisation=min(1.0, 0.05 + 1.5 * share),
        )

    def _app_share(self, t: float) -> float:
        p = self.params
        cycle_s = p.app_mean_on_s + p.app_mean_off_s
        p_on = p.app_mean_on_s / cycle_s
        lo, hi = p.app_share
        share = 0.0
        for slot in range(p.app_slots):
            x = t / cycle_s + self._drawn(f"app{slot}", lambda: uniform(*self._key(_MEMORY), slot, -1))
            cycle = math.floor(x)
            if x - cycle < p_on:
                share += lo + (hi - lo) * uniform(*self._key(_MEMORY), slot, cycle)
        return share

    def _willing(self, t: float, behaviour: TierBehaviour, offset_h: float) -> bool:
        run_s = self.params.online_mean_run_s
        phase = self._drawn("willing", lambda: uniform(*self._key(_AVAILABILITY), -1))
        block = math.floor(t / run_s + phase)
        start_h = (block - phase) * run_s / 3600.0
        share = willing_shares(np.array([behaviour.online_day]), np.array([behaviour.online_night]),
                               np.array([start_h - offset_h]))
        return uniform(*self._key(_AVAILABILITY), block) < float(share[0])

    def _link(self, t: float, behaviour: TierBehaviour, offset_h: float) -> tuple[Link, float]:
        p, radios, key = self.params, self.profile.radios, self._key(_NETWORK)
        if behaviour.network == "vehicle" and Link.WIFI in radios and self._at_depot(t, offset_h):
            return Link.WIFI, _log_uniform(uniform(*key, _DEPOT, math.floor(t / 86400.0) + 1), p.wifi_bps)
        block = math.floor(t / LINK_BLOCK_S + self._drawn("link", lambda: uniform(*key, -1)))
        u = uniform(*key, block)
        if behaviour.network == "lowband":
            code, bounds = (gen.CELLULAR, p.lowband_bps) if u < _LOWBAND_IN_COVERAGE else (gen.OFFLINE, None)
        else:
            state = next(i for i, c in enumerate(_MOBILE_CDF) if u < c or i == len(_MOBILE_CDF) - 1)
            if behaviour.network == "vehicle" and state == 0:
                state = 1  # no Wi-Fi on the road
            code, bounds = gen._mobile_link(state, radios, p)
        if code == gen.CELLULAR and Link.CELLULAR not in radios:
            code, bounds = gen.OFFLINE, None
        bps = 0.0 if bounds is None else _log_uniform(uniform(*key, block, 1), bounds)
        return gen.LINKS[code], bps

    def _at_depot(self, t: float, offset_h: float) -> bool:
        p, key = self.params, self._key(_NETWORK)
        first_h, last_h = p.depot_hours
        day = math.floor(t / 86400.0)
        for d in (day - 1, day):
            if uniform(*key, _DEPOT, d, 0) >= p.depot_wifi_probability:
                continue
            start_h = 24.0 * d + first_h + offset_h + 0.5 * normal(*key, _DEPOT, d)
            if start_h * 3600.0 <= t < (start_h + last_h - first_h) * 3600.0:
                return True
        return False

    def _temperature(self, t: float, share: float, charging: bool, behaviour: TierBehaviour) -> float:
        p, key = self.params, self._key(_HEAT)
        steady = behaviour.ambient_c + self._drawn("resting", lambda: p.ambient_sd_c * normal(*key, -1))
        steady += p.use_heat_c * min(share, 1.0) + (p.charging_heat_c if charging else 0.0)
        keep = 1.0 - p.heat_reversion
        stationary_sd = p.heat_noise_c / math.sqrt(1.0 - keep * keep) if keep < 1.0 else p.heat_noise_c
        return steady + stationary_sd * normal(*key, math.floor(t / p.step_s))


def _log_uniform(u: float, bounds: tuple[float, float]) -> float:
    return float(log_uniforms(np.array([u]), bounds)[0])


def log_uniforms(u: FloatArray, bounds: tuple[float, float]) -> FloatArray:
    """Each of the uniforms ``u`` in [0, 1) mapped log-uniformly onto ``bounds`` (the scalar and
    batch paths' one formula)."""
    low, high = logs(np.array(bounds)).tolist()
    return exps(low + u * (high - low))


def willing_shares(day: FloatArray, night: FloatArray, hours: FloatArray) -> FloatArray:
    """The share of devices willing to train at each of ``hours`` (local time; lowest at 03:00,
    ``generators._willing_share``'s curve) between each row's ``day`` and ``night`` shares,
    kept within [0.01, 0.99] (the scalar and batch paths' one formula)."""
    share = day + (night - day) * (1.0 + cosines(2.0 * math.pi * (hours - 3.0) / 24.0)) / 2.0
    return np.minimum(np.maximum(share, 0.01), 0.99)
