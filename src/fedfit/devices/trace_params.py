"""Knobs of the seeded trace generators: shared ones and per-tier behaviour.

Virtual time 0 is local midnight of day 0 for every device; each device shifts its daily
habits (bedtime charging, idle hours, depot visits) by its own offset drawn from
``N(0, habit_sd_h)``. All durations are in seconds, rates per hour, temperatures in °C.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Literal

from fedfit.errors import ConfigError

#: ``mobile``: Wi-Fi / cellular / offline chain; ``vehicle``: depot Wi-Fi windows, cellular on
#: the road; ``lowband``: low-bandwidth cellular (NB-IoT / LTE-M) with coverage gaps.
NetworkRegime = Literal["mobile", "vehicle", "lowband"]
#: ``nightly``: bedtime charging and random plug-ins; ``harvest``: energy harvesting while the
#: monitored machine runs (working hours). Mains-powered tiers ignore it.
EnergyRegime = Literal["nightly", "harvest"]


@dataclass(frozen=True, slots=True)
class TierBehaviour:
    """How one tier's devices live through a day.

    Attributes:
        network: the link process (see :data:`NetworkRegime`).
        energy: how the battery is replenished (see :data:`EnergyRegime`).
        drain_per_h: battery fraction drained per hour at average use, not charging.
        charge_per_h: battery fraction gained per hour while charging (below the taper).
        ambient_c: mean resting temperature of the device (each device adds its own offset).
        online_day: long-run fraction of mid-afternoon time the device is idle and willing.
        online_night: the same at 03:00; in between it follows a cosine.
    """

    network: NetworkRegime = "mobile"
    energy: EnergyRegime = "nightly"
    drain_per_h: float = 0.05
    charge_per_h: float = 0.6
    ambient_c: float = 29.0
    online_day: float = 0.3
    online_night: float = 0.85


#: Per-tier behaviour of the built-in tiers. Phones drain ~5 %/h of active-day use (a full
#: charge lasts a waking day) and charge at ~0.6/h (0-80 % in about 80 min on a 15-25 W
#: charger); older phones drain faster (worn cells). A watch lasts about a day (4 %/h) and
#: sits on its puck at night. The sensor drains 0.2 %/h while sampling and harvests a little
#: more during working hours. Vehicles are mains-powered, parked at a depot overnight.
BUILTIN_BEHAVIOURS: tuple[tuple[str, TierBehaviour], ...] = (
    ("flagship_phone", TierBehaviour(drain_per_h=0.05, charge_per_h=0.7)),
    ("midrange_phone", TierBehaviour(drain_per_h=0.045, charge_per_h=0.5)),
    ("older_phone", TierBehaviour(drain_per_h=0.07, charge_per_h=0.4)),
    ("tablet", TierBehaviour(drain_per_h=0.03, charge_per_h=0.3, online_day=0.5)),
    ("smartwatch", TierBehaviour(drain_per_h=0.04, charge_per_h=0.8, ambient_c=31.0)),
    (
        "sensor_mcu",
        TierBehaviour(
            network="lowband",
            energy="harvest",
            drain_per_h=0.002,
            charge_per_h=0.004,
            ambient_c=31.0,  # bolted to a running machine
            online_day=0.95,
            online_night=0.95,
        ),
    ),
    (
        "vehicle_computer",
        TierBehaviour(network="vehicle", ambient_c=32.0, online_day=0.8, online_night=0.95),
    ),
)


@dataclass(frozen=True, slots=True)
class TraceParams:
    """Parameters of :func:`fedfit.devices.traces.generate_trace` (defaults documented inline).

    Memory: ``app_slots`` independent apps each alternate running (mean ``app_mean_on_s``) and
    stopped (mean ``app_mean_off_s``); a running app holds a share of the granted training
    memory drawn uniformly from ``app_share``. With the defaults an app runs 2/7 of the time
    and takes 13.5 % on average: ~15 % taken on average, 40 % or more about 6 % of the time.

    Raises:
        ConfigError: a value is out of range; the message names ``trace.<field>``.
    """

    step_s: float = 60.0  # grid of the piecewise-constant trace
    # -- memory pressure
    app_slots: int = 4
    app_mean_on_s: float = 20 * 60.0
    app_mean_off_s: float = 50 * 60.0
    app_share: tuple[float, float] = (0.02, 0.25)
    # -- battery
    start_battery: tuple[float, float] = (0.3, 1.0)
    nightly_probability: float = 0.85  # a night with a bedtime charge (or a harvesting day)
    nightly_start_h: float = 22.5  # mean bedtime plug-in, local hours
    nightly_start_sd_h: float = 1.0
    nightly_duration_h: tuple[float, float] = (5.0, 9.0)
    plugins_per_day: float = 1.5  # random top-up sessions (desk, car)
    plugin_duration_s: tuple[float, float] = (15 * 60.0, 90 * 60.0)
    low_battery: float = 0.15  # below this the user looks for a charger...
    low_battery_plug_per_step: float = 0.05  # ...and plugs in with this chance per step
    charge_taper_above: float = 0.8  # charging slows to a third above this level
    harvest_hours: tuple[float, float] = (6.0, 22.0)  # machine running (two shifts)
    # -- heat
    ambient_sd_c: float = 2.0  # device-to-device spread of the resting temperature
    charging_heat_c: float = 6.0  # steady rise while charging (fast-charge warm-up)
    use_heat_c: float = 12.0  # steady rise per unit of app memory share (a proxy for use)
    heat_reversion: float = 0.15  # fraction of the gap to the steady value closed per step
    heat_noise_c: float = 0.4  # per-step noise
    warm_c: float = 38.0  # thermal WARM at or above (skin temperature where phones dim)
    hot_c: float = 43.0  # thermal HOT at or above (phones throttle hard / stop charging)
    # -- network (bandwidth drawn log-uniformly per link spell, bits per second)
    wifi_bps: tuple[float, float] = (20e6, 100e6)
    cellular_bps: tuple[float, float] = (1e6, 20e6)
    poor_cellular_bps: tuple[float, float] = (0.2e6, 1e6)
    lowband_bps: tuple[float, float] = (20e3, 80e3)  # LTE-M / NB-IoT uplink, ~50 kbit/s
    depot_hours: tuple[float, float] = (19.0, 30.0)  # vehicle at depot, 19:00 to 06:00
    depot_wifi_probability: float = 0.95  # a night the depot Wi-Fi is reachable
    # -- availability
    online_mean_run_s: float = 45 * 60.0  # mean length of an idle-and-willing spell
    habit_sd_h: float = 1.5
    behaviours: tuple[tuple[str, TierBehaviour], ...] = BUILTIN_BEHAVIOURS
    default_behaviour: TierBehaviour = TierBehaviour()  # for user tiers not listed

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"trace.{f.name}: must be finite, got {value!r}")
        self._check(self.step_s > 0, "step_s", "must be > 0")
        self._check(self.app_slots >= 0, "app_slots", "must be >= 0")
        self._check(self.app_mean_on_s > 0, "app_mean_on_s", "must be > 0")
        self._check(self.app_mean_off_s > 0, "app_mean_off_s", "must be > 0")
        for name in ("app_share", "start_battery"):
            lo, hi = getattr(self, name)
            self._check(0 <= lo <= hi <= 1, name, "need 0 <= lo <= hi <= 1")
        self._check(self.warm_c < self.hot_c, "warm_c", "must be below hot_c")
        self._check(0 < self.heat_reversion <= 1, "heat_reversion", "must be in (0, 1]")
        self._check(self.online_mean_run_s > 0, "online_mean_run_s", "must be > 0")
        for name in ("wifi_bps", "cellular_bps", "poor_cellular_bps", "lowband_bps"):
            lo, hi = getattr(self, name)
            self._check(0 < lo <= hi, name, "need 0 < lo <= hi")

    @staticmethod
    def _check(ok: bool, name: str, what: str) -> None:
        if not ok:
            raise ConfigError(f"trace.{name}: {what}")

    def behaviour(self, tier: str) -> TierBehaviour:
        """The behaviour of ``tier``, or :attr:`default_behaviour` for a tier not listed."""
        for name, behaviour in self.behaviours:
            if name == tier:
                return behaviour
        return self.default_behaviour
