"""A device's own messages: its network and thermal state, its static profile and its snapshots.

The registry keeps :class:`DeviceProfile` and :class:`DeviceState`; monitors (simulated traces,
psutil on a real device) produce the states. Re-exported by :mod:`fedfit.types`, where every
layer's messages are named.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Link(str, enum.Enum):
    """The network a device is on at a moment."""

    WIFI = "wifi"
    CELLULAR = "cellular"
    OFFLINE = "offline"


class Thermal(str, enum.Enum):
    """Coarse thermal state, as phones report it. ``UNKNOWN`` where nothing is reported."""

    NOMINAL = "nominal"
    WARM = "warm"
    HOT = "hot"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class UtilisationCurve:
    """Fraction of peak FLOP/s reached at a micro-batch size: ``peak * b / (b + half_batch)``.

    Small batches under-use vector units and accelerators; the curve saturates at ``peak``.

    >>> UtilisationCurve(peak=0.5, half_batch=4.0).at(4)
    0.25
    """

    peak: float
    half_batch: float

    def at(self, micro_batch: int) -> float:
        """Utilisation (0..1] at ``micro_batch`` samples per forward/backward pass."""
        return self.peak * micro_batch / (micro_batch + self.half_batch)


@dataclass(frozen=True, slots=True)
class DeviceProfile:
    """Static capabilities of one device (its tier's values, possibly jittered).

    Attributes:
        tier: tier name from the catalogue (``flagship_phone``, ``sensor_mcu``, ...).
        total_memory_bytes: physical RAM.
        training_memory_bytes: RAM the OS grants a background training job when no app presses.
        flops_per_s: peak FLOP/s of the training processor.
        utilisation: utilisation curve over the micro-batch size.
        battery_capacity_j: battery energy in joules; ``None`` for mains-powered devices.
        compute_power_w: power drawn while training.
        radio_power_w: power drawn while transmitting.
        latency_s: round-trip latency added to each transfer.
        radios: links the device has (``wifi``, ``cellular``).
        cpu_cores: cores (informational: ``flops_per_s`` is the whole processor's peak, all
            cores together, and ``utilisation`` its parallel efficiency by micro-batch, so the
            time model counting cores again would count them twice).
        has_npu: whether an NPU is present (informational: phone and watch NPUs run inference;
            training runtimes train on the CPU/GPU that ``flops_per_s`` describes).
        workspace_bytes: fixed workspace of the device's training runtime (allocator slack,
            kernels' scratch); ``None``: the memory model's default (a phone-class runtime's).
    """

    tier: str
    total_memory_bytes: int
    training_memory_bytes: int
    flops_per_s: float
    utilisation: UtilisationCurve
    battery_capacity_j: float | None
    compute_power_w: float
    radio_power_w: float
    latency_s: float
    radios: tuple[Link, ...]
    cpu_cores: int = 1
    has_npu: bool = False
    workspace_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class DeviceState:
    """A snapshot of a device's dynamic resources, as a monitor reports it.

    ``None`` means *unknown* (the platform does not report it), never a guess.

    Attributes:
        free_memory_bytes: memory training may use right now.
        battery_fraction: charge in [0, 1]; ``None`` if unknown or no battery.
        charging: whether plugged in; ``None`` if unknown.
        temperature_c: device temperature; ``None`` if unknown.
        thermal: coarse thermal state.
        link: current network.
        bandwidth_bps: usable bandwidth in bits per second (0 when offline).
        online: whether the device can be reached and is willing to train.
        cpu_utilisation: background CPU load in [0, 1]; ``None`` if unknown.
    """

    free_memory_bytes: int
    battery_fraction: float | None
    charging: bool | None
    temperature_c: float | None
    thermal: Thermal
    link: Link
    bandwidth_bps: float
    online: bool
    cpu_utilisation: float | None = None
