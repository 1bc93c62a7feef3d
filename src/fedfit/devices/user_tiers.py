"""User tiers from YAML: ``fleet.custom_tiers`` entries parsed into :class:`~fedfit.types.DeviceProfile`.

A user tier names every number a built-in tier has (or inherits them with ``base:`` from a built-in
tier of :mod:`fedfit.devices.catalogue`); sizes take a unit suffix (``_bytes``, ``_kb``, ``_mb``).
Any bad key or value is a one-line :class:`~fedfit.errors.ConfigError` naming the tier and the key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from types import MappingProxyType

from fedfit.devices.catalogue import J_PER_WH, KIB, MIB, TIERS, tier
from fedfit.errors import ConfigError
from fedfit.types import DeviceProfile, Link, UtilisationCurve

_MEMORY_UNITS: Mapping[str, int] = MappingProxyType({"_bytes": 1, "_kb": KIB, "_mb": MIB})
_MEMORY_FIELDS = ("total_memory", "training_memory")
_SIZE_FIELDS = (*_MEMORY_FIELDS, "workspace")  # sizes with unit suffixes; workspace is optional
# key -> (must be > 0, upper bound or None); all other numbers must be >= 0.
_NUMBERS: Mapping[str, tuple[bool, float | None]] = MappingProxyType(
    {
        "flops_per_s": (True, None),
        "utilisation_peak": (True, 1.0),
        "utilisation_half_batch": (False, None),
        "compute_power_w": (False, None),
        "radio_power_w": (False, None),
        "latency_s": (False, None),
    }
)
_REQUIRED = (*_MEMORY_FIELDS, *_NUMBERS, "battery_wh", "radios")
_KNOWN_KEYS = frozenset(
    {*_NUMBERS, "battery_wh", "radios", "cpu_cores", "has_npu", "base"}
    | {field + unit for field in _SIZE_FIELDS for unit in _MEMORY_UNITS}
)


@dataclass(slots=True)
class _Draft:
    """A profile being assembled; ``present`` holds the logical keys set so far."""

    present: set[str] = dataclass_field(default_factory=set)
    total_memory: int = 0
    training_memory: int = 0
    flops_per_s: float = 0.0
    utilisation_peak: float = 0.0
    utilisation_half_batch: float = 0.0
    battery_wh: float | None = None
    compute_power_w: float = 0.0
    radio_power_w: float = 0.0
    latency_s: float = 0.0
    radios: tuple[Link, ...] = ()
    cpu_cores: int = 1
    has_npu: bool = False
    workspace: int | None = None

    @classmethod
    def inherit(cls, parent: DeviceProfile | None) -> _Draft:
        if parent is None:
            return cls()
        battery = parent.battery_capacity_j
        return cls(
            present=set(_REQUIRED),
            total_memory=parent.total_memory_bytes,
            training_memory=parent.training_memory_bytes,
            flops_per_s=parent.flops_per_s,
            utilisation_peak=parent.utilisation.peak,
            utilisation_half_batch=parent.utilisation.half_batch,
            battery_wh=None if battery is None else battery / J_PER_WH,
            compute_power_w=parent.compute_power_w,
            radio_power_w=parent.radio_power_w,
            latency_s=parent.latency_s,
            radios=parent.radios,
            cpu_cores=parent.cpu_cores,
            has_npu=parent.has_npu,
            workspace=parent.workspace_bytes,
        )

    def build(self, name: str) -> DeviceProfile:
        return DeviceProfile(
            tier=name,
            total_memory_bytes=self.total_memory,
            training_memory_bytes=self.training_memory,
            flops_per_s=self.flops_per_s,
            utilisation=UtilisationCurve(self.utilisation_peak, self.utilisation_half_batch),
            battery_capacity_j=None if self.battery_wh is None else self.battery_wh * J_PER_WH,
            compute_power_w=self.compute_power_w,
            radio_power_w=self.radio_power_w,
            latency_s=self.latency_s,
            radios=self.radios,
            cpu_cores=self.cpu_cores,
            has_npu=self.has_npu,
            workspace_bytes=self.workspace,
        )


def profile_from_mapping(
    name: str, spec: Mapping[str, object], base: DeviceProfile | None = None,
    tiers: Mapping[str, DeviceProfile] = TIERS,
) -> DeviceProfile:
    """Build a user tier from YAML-like values.

    Keys: ``total_memory_{bytes,kb,mb}``, ``training_memory_{bytes,kb,mb}`` (``kb`` = 2**10
    bytes, ``mb`` = 2**20), ``flops_per_s``, ``utilisation_peak``, ``utilisation_half_batch``,
    ``battery_wh`` (``null``: mains-powered), ``compute_power_w``, ``radio_power_w``,
    ``latency_s``, ``radios`` (list of ``wifi`` / ``cellular``), ``cpu_cores``, ``has_npu``,
    ``workspace_{bytes,kb,mb}`` (the training runtime's workspace; optional), and ``base``: the name of a built-in tier whose values fill the keys left out.

    Args:
        name: the new tier's name (becomes ``DeviceProfile.tier``).
        spec: the tier's mapping, e.g. ``config["tiers"][name]``.
        base: profile to inherit from when ``spec`` has no ``base`` key (e.g. another user
            tier the caller resolved). With neither, every key but ``cpu_cores`` (default 1)
            and ``has_npu`` (default false) is required.
        tiers: the built-in tiers ``base`` names (a catalogue of
            :data:`fedfit.devices.realistic.CATALOGUES`; default the scaled one).

    Returns:
        The validated profile.

    Raises:
        ConfigError: an unknown, missing, mistyped or impossible key (negative memory,
            training memory above total memory, ...); the message names ``tiers.<name>.<key>``.

    >>> p = profile_from_mapping("big_watch", {"base": "smartwatch", "training_memory_mb": 8})
    >>> (p.tier, p.training_memory_bytes, p.flops_per_s)
    ('big_watch', 8388608, 2000000000.0)
    """
    if not isinstance(spec, Mapping):
        raise ConfigError(f"tiers.{name}: expected a mapping, got {type(spec).__name__}")
    for key in spec:
        if key not in _KNOWN_KEYS:
            known = ", ".join(sorted(_KNOWN_KEYS))
            raise ConfigError(f"tiers.{name}.{key}: unknown key (known: {known})")
    draft = _Draft.inherit(_resolve_base(name, spec, base, tiers))
    _parse_numbers(name, spec, draft)
    _parse_others(name, spec, draft)
    memory_keys = _parse_memory(name, spec, draft)
    missing = [key for key in _REQUIRED if key not in draft.present]
    if missing:
        key = missing[0] + ("_mb" if missing[0] in _MEMORY_FIELDS else "")
        raise ConfigError(f"tiers.{name}.{key}: missing (and no base tier to inherit from)")
    if draft.training_memory > draft.total_memory:
        key = memory_keys.get("training_memory") or memory_keys["total_memory"]
        raise ConfigError(
            f"tiers.{name}.{key}: training memory ({draft.training_memory} bytes) exceeds "
            f"total memory ({draft.total_memory} bytes)"
        )
    return draft.build(name)


def _resolve_base(
    name: str, spec: Mapping[str, object], base: DeviceProfile | None, tiers: Mapping[str, DeviceProfile]
) -> DeviceProfile | None:
    if "base" not in spec:
        return base
    if base is not None:
        raise ConfigError(f"tiers.{name}.base: a base is given both here and by the caller")
    parent = spec["base"]
    if not isinstance(parent, str):
        raise ConfigError(f"tiers.{name}.base: expected a tier name, got {parent!r}")
    if parent not in tiers:
        raise ConfigError(f"tiers.{name}.base: unknown device tier {parent!r} (known: {', '.join(tiers)})")
    return tiers[parent]


def _number(name: str, key: str, value: object, *, positive: bool) -> float:
    value = _numeric_string(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"tiers.{name}.{key}: expected a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ConfigError(f"tiers.{name}.{key}: must be finite, got {value!r}")
    if number < 0 or (positive and number == 0):
        bound = "> 0" if positive else ">= 0"
        raise ConfigError(f"tiers.{name}.{key}: must be {bound}, got {value!r}")
    return number


def _numeric_string(value: object) -> object:
    """A string that spells a decimal number, as that number (YAML 1.1 loaders, PyYAML's
    ``safe_load`` among them, read ``1.0e10`` and ``1e10`` as strings); anything else as it is."""
    if isinstance(value, str):
        try:
            return float(value.strip().replace("_", "")) if _DECIMAL.fullmatch(value.strip()) else value
        except ValueError:
            return value
    return value


_DECIMAL = re.compile(r"[-+]?(\d[\d_]*)?(\.\d*)?([eE][-+]?\d+)?")


def _parse_numbers(name: str, spec: Mapping[str, object], draft: _Draft) -> None:
    for key, (positive, upper) in _NUMBERS.items():
        if key not in spec:
            continue
        number = _number(name, key, spec[key], positive=positive)
        if upper is not None and number > upper:
            raise ConfigError(f"tiers.{name}.{key}: must be <= {upper}, got {spec[key]!r}")
        setattr(draft, key, number)
        draft.present.add(key)


def _parse_others(name: str, spec: Mapping[str, object], draft: _Draft) -> None:
    if "battery_wh" in spec:
        raw = spec["battery_wh"]
        draft.battery_wh = None if raw is None else _number(name, "battery_wh", raw, positive=True)
        draft.present.add("battery_wh")
    if "radios" in spec:
        draft.radios = _parse_radios(name, spec["radios"])
        draft.present.add("radios")
    if "cpu_cores" in spec:
        cores = spec["cpu_cores"]
        if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
            raise ConfigError(f"tiers.{name}.cpu_cores: expected an integer >= 1, got {cores!r}")
        draft.cpu_cores = cores
    if "has_npu" in spec:
        npu = spec["has_npu"]
        if not isinstance(npu, bool):
            raise ConfigError(f"tiers.{name}.has_npu: expected true or false, got {npu!r}")
        draft.has_npu = npu


def _parse_radios(name: str, raw: object) -> tuple[Link, ...]:
    if isinstance(raw, str) or not isinstance(raw, (list, tuple)) or not raw:
        raise ConfigError(f"tiers.{name}.radios: expected a non-empty list, got {raw!r}")
    radios: list[Link] = []
    for item in raw:
        if item not in (Link.WIFI.value, Link.CELLULAR.value):
            raise ConfigError(
                f"tiers.{name}.radios: unknown radio {item!r} (known: wifi, cellular)"
            )
        if Link(item) not in radios:
            radios.append(Link(item))
    return tuple(radios)


def _parse_memory(name: str, spec: Mapping[str, object], draft: _Draft) -> dict[str, str]:
    """Set the memory sizes given, in bytes; return logical field -> key as written."""
    written: dict[str, str] = {}
    for field in _SIZE_FIELDS:
        keys = [field + unit for unit in _MEMORY_UNITS if field + unit in spec]
        if len(keys) > 1:
            raise ConfigError(f"tiers.{name}.{keys[1]}: {field} is also given as {keys[0]}")
        if not keys:
            continue
        key = keys[0]
        size = _number(name, key, spec[key], positive=True) * _MEMORY_UNITS[key[len(field) :]]
        if size != math.floor(size):
            raise ConfigError(f"tiers.{name}.{key}: not a whole number of bytes, got {spec[key]!r}")
        setattr(draft, field, int(size))
        draft.present.add(field)
        written[field] = key
    written.setdefault("total_memory", "total_memory_bytes")
    return written

