"""A device's dynamic resources over virtual time: :class:`DeviceTrace` and its generator.

A trace is piecewise constant on a grid of ``params.step_s`` seconds (default 60 s) over a
horizon (default 48 h). Past the horizon it **wraps**: time ``t`` reads step
``int(t // step_s) % n_steps``, so a horizon that is a whole number of days keeps the daily
rhythm (the battery level may jump at the seam). Lookups are O(1).

Random streams: generator ``k`` draws from ``numpy.random.default_rng([seed, device_id, k])``
with k = 0 habits, 1 memory, 2 network, 3 availability, 4 charging and battery, 5 heat.

>>> from fedfit.devices.catalogue import tier
>>> trace = generate_trace(tier("sensor_mcu"), seed=1, device_id=7, horizon_s=3600.0)
>>> trace.state_at(0.0) == generate_trace(tier("sensor_mcu"), seed=1, device_id=7,
...                                       horizon_s=3600.0).state_at(0.0)
True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedfit.devices import battery as battery_gen
from fedfit.devices import generators as gen
from fedfit.devices.consumption import with_consumption
from fedfit.devices.trace_params import TraceParams
from fedfit.types import DeviceProfile, DeviceState, Link, Thermal

_HABITS, _MEMORY, _NETWORK, _AVAILABILITY, _BATTERY, _HEAT = range(6)
#: The per-step array fields of :class:`DeviceTrace`.
TRACE_ARRAYS = (
    "free_memory_bytes",
    "battery_fraction",
    "charging",
    "temperature_c",
    "link",
    "bandwidth_bps",
    "online",
    "cpu_utilisation",
)


def thermal_of(temperature_c: float | None, params: TraceParams) -> Thermal:
    """Coarse thermal state: HOT at or above ``params.hot_c``, WARM at or above ``warm_c``.

    ``None`` (no sensor) gives ``Thermal.UNKNOWN``.
    """
    if temperature_c is None:
        return Thermal.UNKNOWN
    if temperature_c >= params.hot_c:
        return Thermal.HOT
    if temperature_c >= params.warm_c:
        return Thermal.WARM
    return Thermal.NOMINAL


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class DeviceTrace:
    """One device's dynamic state on a step grid (read-only numpy arrays of equal length).

    Attributes:
        profile: the device's static profile.
        params: the parameters the trace was made with (step, thermal thresholds).
        free_memory_bytes: int64, memory training may use.
        battery_fraction: float64 in [0, 1]; ``None`` for mains-powered devices.
        charging: bool; ``None`` for mains-powered devices.
        temperature_c: float64, NaN where unknown; ``None`` where the device has no sensor.
        link: int64 codes into :data:`fedfit.devices.generators.LINKS`.
        bandwidth_bps: float64, 0 exactly when offline.
        online: bool, idle and willing, on a link and with charge left.
        cpu_utilisation: float64 background CPU load in [0, 1].
    """

    profile: DeviceProfile
    params: TraceParams
    free_memory_bytes: gen.IntArray
    battery_fraction: gen.FloatArray | None
    charging: gen.BoolArray | None
    temperature_c: gen.FloatArray | None
    link: gen.IntArray
    bandwidth_bps: gen.FloatArray
    online: gen.BoolArray
    cpu_utilisation: gen.FloatArray
    #: The last grid index read and its state (states are immutable, a pure function of the
    #: index): a fleet checks every idle device in every round, and rounds shorter than a step
    #: read the same index again.
    _last: list[tuple[int, DeviceState]] = dataclasses.field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        n = len(self.free_memory_bytes)
        for name in TRACE_ARRAYS:
            array = getattr(self, name)
            if array is None:
                continue
            if len(array) != n or n == 0:
                raise ValueError(f"trace array {name} has {len(array)} steps, expected {n} > 0")
            array.flags.writeable = False

    @property
    def step_s(self) -> float:
        """Seconds per step of the grid."""
        return self.params.step_s

    @property
    def n_steps(self) -> int:
        """Number of steps before the trace wraps."""
        return len(self.free_memory_bytes)

    @property
    def horizon_s(self) -> float:
        """Virtual seconds covered before the trace wraps."""
        return self.n_steps * self.params.step_s

    def index_at(self, t_s: float) -> int:
        """Grid index holding virtual time ``t_s`` (wrapping past the horizon).

        Raises:
            ValueError: ``t_s`` is negative or not finite.
        """
        if not math.isfinite(t_s) or t_s < 0:
            raise ValueError(f"virtual time must be finite and >= 0, got {t_s!r}")
        return int(t_s // self.params.step_s) % self.n_steps

    def state_at(self, t_s: float, consumed_j: float = 0.0) -> DeviceState:
        """The device's state at virtual time ``t_s``, after ``consumed_j`` of training energy.

        Args:
            t_s: virtual seconds since the start (>= 0).
            consumed_j: see :func:`with_consumption`.

        Returns:
            The snapshot; O(1).
        """
        i = self.index_at(t_s)
        last = self._last
        if last and last[0][0] == i:
            return with_consumption(last[0][1], self.profile, consumed_j)
        state = self._state(i)
        last[:] = [(i, state)]
        return with_consumption(state, self.profile, consumed_j)

    def _state(self, i: int) -> DeviceState:
        """The state at grid index ``i``, before any training energy."""
        temp = None if self.temperature_c is None else float(self.temperature_c[i])
        temp = None if temp is None or math.isnan(temp) else temp
        level = self.battery_fraction
        state = DeviceState(
            free_memory_bytes=int(self.free_memory_bytes[i]),
            battery_fraction=None if level is None else float(level[i]),
            charging=None if self.charging is None else bool(self.charging[i]),
            temperature_c=temp,
            thermal=thermal_of(temp, self.params),
            link=gen.LINKS[int(self.link[i])],
            bandwidth_bps=float(self.bandwidth_bps[i]),
            online=bool(self.online[i]),
            cpu_utilisation=float(self.cpu_utilisation[i]),
        )
        return state


def generate_trace(
    profile: DeviceProfile,
    *,
    seed: int,
    device_id: int,
    params: TraceParams = TraceParams(),
    horizon_s: float = 172800.0,
) -> DeviceTrace:
    """Generate a device's trace: a pure function of its arguments.

    Args:
        profile: the device's profile; its tier picks the behaviour (``params.behaviour``).
        seed: experiment seed (>= 0).
        device_id: the device (>= 0); different ids give independent traces.
        params: generator parameters.
        horizon_s: virtual seconds to generate before wrapping (at least one step).

    Returns:
        The trace. Free memory is ``training_memory_bytes * (1 - app share)`` floored at 0;
        ``online`` needs willingness, a link and a non-empty battery; background CPU load is
        ``0.05 + 1.5 * app share`` capped at 1.

    Raises:
        ValueError: a negative seed or device id, or a horizon shorter than one step.
    """
    drawn = _drawn(profile, seed, device_id, params, horizon_s)
    steady, noise = drawn.pop("heat")
    return _assembled(profile, params, drawn, battery_gen.heat_walk(steady, noise, params))


#: Devices whose heat walks :func:`generate_traces` runs as one array operation.
WALK_BLOCK = 1024


def generate_traces(
    profiles: Sequence[DeviceProfile],
    device_ids: Sequence[int],
    *,
    seed: int,
    params: TraceParams = TraceParams(),
    horizon_s: float = 172800.0,
    replaced: Sequence[frozenset[str]] | None = None,
) -> list[DeviceTrace]:
    """:func:`generate_trace` of each ``(profiles[j], device_ids[j])``, equal bit for bit.

    Each device draws from its own random streams exactly as alone; the temperature walks, a
    per-step recurrence, run for up to :data:`WALK_BLOCK` devices at once (elementwise over
    devices, the same float operations per device), which is most of the time saved.

    ``replaced[j]`` names fields of :data:`TRACE_ARRAYS` that device j's caller overwrites at
    every step (a CSV trace whose first row is at t = 0): generators whose every output is
    overwritten are skipped (each has its own random stream, so the others' draws do not
    change) and their fields hold placeholders: availability when ``online`` is replaced, the
    network when ``link``, ``bandwidth_bps`` and ``online`` are, heat when ``temperature_c`` is.
    """
    if len(profiles) != len(device_ids) or (replaced is not None and len(replaced) != len(profiles)):
        raise ValueError(f"{len(profiles)} profiles for {len(device_ids)} device ids"
                         + ("" if replaced is None else f" and {len(replaced)} replaced sets"))
    skips = list(replaced) if replaced is not None else [frozenset()] * len(profiles)
    traces: list[DeviceTrace] = []
    for lo in range(0, len(profiles), WALK_BLOCK):
        block = list(zip(profiles[lo:lo + WALK_BLOCK], device_ids[lo:lo + WALK_BLOCK], skips[lo:lo + WALK_BLOCK],
                         strict=True))
        drawn = [_drawn(p, seed, d, params, horizon_s, skip) for p, d, skip in block]
        heats = [d.pop("heat") for d in drawn]
        walked = iter(_walk_rows([h for h in heats if h is not None], params))
        temps = [next(walked) if h is not None else np.full(len(d["share"]), np.nan) for h, d in zip(heats, drawn)]
        traces += [_assembled(p, params, d, t) for (p, _, _), d, t in zip(block, drawn, temps, strict=True)]
    return traces


def _walk_rows(heats: list[tuple[gen.FloatArray, gen.FloatArray]], params: TraceParams) -> gen.FloatArray:
    if not heats:
        return np.empty((0, 0))
    return battery_gen.heat_walk(np.stack([h[0] for h in heats]), np.stack([h[1] for h in heats]), params)


def _drawn(profile: DeviceProfile, seed: int, device_id: int, params: TraceParams,
           horizon_s: float, replaced: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Every random draw of a device's trace: its arrays but temperature, and the heat walk's
    ``(steady, noise)`` under ``heat`` (``None`` when replaced; see :func:`generate_traces`)."""
    if seed < 0 or device_id < 0:
        raise ValueError(f"seed and device_id must be >= 0, got {seed}, {device_id}")
    if not horizon_s >= params.step_s:
        raise ValueError(f"horizon_s {horizon_s!r} is shorter than one step ({params.step_s} s)")
    n = math.ceil(horizon_s / params.step_s)
    behaviour = params.behaviour(profile.tier)

    def rng(k: int) -> np.random.Generator:
        return np.random.default_rng([seed, device_id, k])

    offset_h = gen.habit_offset_h(rng(_HABITS), params)
    share = gen.app_memory_share(rng(_MEMORY), n, params)
    if {"link", "bandwidth_bps", "online"} <= replaced:
        link, bps = np.full(n, gen.OFFLINE, dtype=np.int64), np.zeros(n)
    else:
        link, bps = gen.network(rng(_NETWORK), n, params, behaviour, profile.radios, offset_h)
    if "online" in replaced:
        willing = np.zeros(n, dtype=np.bool_)
    else:
        willing = gen.availability(rng(_AVAILABILITY), n, params, behaviour, offset_h)
    online = willing & (link != gen.OFFLINE)
    level: gen.FloatArray | None = None
    charging: gen.BoolArray | None = None
    if profile.battery_capacity_j is not None:
        energy_rng = rng(_BATTERY)
        plan = battery_gen.planned_charging(energy_rng, n, params, behaviour, offset_h)
        level, charging = battery_gen.battery(energy_rng, plan, share, params, behaviour)
        online &= level > 0
    heat = (None if "temperature_c" in replaced
            else battery_gen.heat_inputs(rng(_HEAT), charging, share, params, behaviour))
    return {"share": share, "link": link, "bps": bps, "online": online, "level": level, "charging": charging,
            "heat": heat}


def _assembled(profile: DeviceProfile, params: TraceParams, drawn: dict[str, Any],
               temperature_c: gen.FloatArray) -> DeviceTrace:
    share = drawn["share"]
    free_share = np.clip(1.0 - share, 0.0, 1.0)
    free = np.floor(profile.training_memory_bytes * free_share).astype(np.int64)
    return DeviceTrace(
        profile=profile,
        params=params,
        free_memory_bytes=free,
        battery_fraction=drawn["level"],
        charging=drawn["charging"],
        temperature_c=temperature_c,
        link=drawn["link"],
        bandwidth_bps=drawn["bps"],
        online=drawn["online"],
        cpu_utilisation=np.minimum(1.0, 0.05 + 1.5 * share),
    )
