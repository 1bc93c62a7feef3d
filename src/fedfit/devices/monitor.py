"""Resource monitors: where a device's :class:`~fedfit.types.DeviceState` comes from.

:class:`TraceMonitor` reads a simulated device's trace at a virtual time; :class:`PsutilMonitor`
measures the real host it runs on. Both report ``None`` / ``Thermal.UNKNOWN`` for what they
cannot know rather than a guess.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from fedfit.devices.traces import DeviceTrace
from fedfit.types import DeviceState, Link, Thermal

# Interface-name prefixes (Linux, macOS, Android) that tell the link kind. Wired Ethernet is
# unmetered like Wi-Fi and is reported as Wi-Fi.
_WIFI_PREFIXES = ("wlan", "wlp", "wl", "en", "eth")
_CELLULAR_PREFIXES = ("wwan", "rmnet", "ccmni", "pdp_ip", "ppp")


@runtime_checkable
class Monitor(Protocol):
    """Takes a snapshot of a device's dynamic resources."""

    def snapshot(self, at_s: float) -> DeviceState:
        """The device's state at virtual time ``at_s`` (a real monitor reports *now*)."""
        ...


class TraceMonitor:
    """A simulated device's monitor: reads its :class:`DeviceTrace`.

    Args:
        trace: the device's trace.
        consumed_j_fn: training energy (J) drawn by virtual time ``t``, subtracted from the
            battery (see :func:`fedfit.devices.traces.with_consumption`); ``None``: nothing.

    >>> from fedfit.devices.catalogue import tier
    >>> from fedfit.devices.traces import generate_trace
    >>> trace = generate_trace(tier("tablet"), seed=0, device_id=1, horizon_s=600.0)
    >>> TraceMonitor(trace).snapshot(30.0) == trace.state_at(0.0)
    True
    """

    def __init__(
        self, trace: DeviceTrace, consumed_j_fn: Callable[[float], float] | None = None
    ) -> None:
        self._trace = trace
        self._consumed_j_fn = consumed_j_fn

    def snapshot(self, at_s: float) -> DeviceState:
        """The trace's state at ``at_s``, less the energy consumed by then."""
        consumed = 0.0 if self._consumed_j_fn is None else self._consumed_j_fn(at_s)
        return self._trace.state_at(at_s, consumed)


class PsutilMonitor:
    """The real host's monitor, through psutil.

    Reports available memory (capped by ``training_budget_bytes``), CPU load since the last
    snapshot, battery and temperature where the platform has sensors, the link kind from the
    names of the interfaces that are up, and bandwidth measured from the transfers recorded
    with :meth:`record_transfer` (0.0, meaning *not measured yet*, before any).

    Args:
        training_budget_bytes: cap on the memory offered to training; ``None``: no cap.
        transfer_window: how many recent transfers the bandwidth estimate uses.
        warm_c: WARM at or above this many °C when the sensor gives no ``high`` mark.
        hot_c: HOT at or above this many °C when the sensor gives no ``high`` mark. With a
            ``high`` mark, HOT is at or above it and WARM ``hot_c - warm_c`` below it.
    """

    def __init__(
        self,
        *,
        training_budget_bytes: int | None = None,
        transfer_window: int = 8,
        warm_c: float = 70.0,
        hot_c: float = 85.0,
    ) -> None:
        if training_budget_bytes is not None and training_budget_bytes < 0:
            raise ValueError(f"training_budget_bytes must be >= 0, got {training_budget_bytes}")
        if transfer_window < 1:
            raise ValueError(f"transfer_window must be >= 1, got {transfer_window}")
        self._budget = training_budget_bytes
        self._transfers: deque[tuple[int, float]] = deque(maxlen=transfer_window)
        self._warm_c, self._hot_c = warm_c, hot_c
        import psutil  # noqa: PLC0415 - the real host's monitor only: a simulated run never imports psutil

        psutil.cpu_percent(interval=None)  # prime: the first reading is meaningless

    def record_transfer(self, num_bytes: int, seconds: float) -> None:
        """Record a finished transfer of ``num_bytes`` that took ``seconds`` (wall time).

        Raises:
            ValueError: negative bytes or non-positive seconds.
        """
        if num_bytes < 0 or not (math.isfinite(seconds) and seconds > 0):
            raise ValueError(f"need num_bytes >= 0 and seconds > 0, got {num_bytes}, {seconds}")
        self._transfers.append((num_bytes, seconds))

    def bandwidth_bps(self) -> float:
        """Throughput of the recent transfers (total bits / total seconds); 0.0 if none."""
        if not self._transfers:
            return 0.0
        total_bytes = sum(b for b, _ in self._transfers)
        total_s = sum(s for _, s in self._transfers)
        return 8.0 * total_bytes / total_s

    def snapshot(self, at_s: float) -> DeviceState:
        """Measure the host now (``at_s`` is not used: a real host lives in wall time)."""
        import psutil  # noqa: PLC0415 - see __init__

        available = int(psutil.virtual_memory().available)
        free = available if self._budget is None else min(available, self._budget)
        fraction, charging = _battery()
        temperature, thermal = self._temperature()
        link = _link()
        return DeviceState(
            free_memory_bytes=free,
            battery_fraction=fraction,
            charging=charging,
            temperature_c=temperature,
            thermal=thermal,
            link=link,
            bandwidth_bps=0.0 if link is Link.OFFLINE else self.bandwidth_bps(),
            online=link is not Link.OFFLINE,
            cpu_utilisation=min(1.0, psutil.cpu_percent(interval=None) / 100.0),
        )

    def _temperature(self) -> tuple[float | None, Thermal]:
        """Hottest sensor reading and its thermal state (against the sensor's ``high`` mark)."""
        import psutil  # noqa: PLC0415 - see __init__

        read = getattr(psutil, "sensors_temperatures", None)
        readings = read() if read is not None else {}
        hottest = None
        for entries in (readings or {}).values():
            for entry in entries:
                if entry.current is None:
                    continue
                if hottest is None or entry.current > hottest.current:
                    hottest = entry
        if hottest is None:
            return None, Thermal.UNKNOWN
        current = float(hottest.current)
        hot = float(hottest.high) if hottest.high else self._hot_c
        warm = hot - (self._hot_c - self._warm_c) if hottest.high else self._warm_c
        if current >= hot:
            return current, Thermal.HOT
        return current, Thermal.WARM if current >= warm else Thermal.NOMINAL


def _battery() -> tuple[float | None, bool | None]:
    """Battery fraction and plugged-in flag; ``(None, None)`` without a battery sensor."""
    import psutil  # noqa: PLC0415 - see PsutilMonitor.__init__

    read = getattr(psutil, "sensors_battery", None)
    status = read() if read is not None else None
    if status is None:
        return None, None
    fraction = min(1.0, max(0.0, float(status.percent) / 100.0))
    plugged = status.power_plugged
    return fraction, None if plugged is None else bool(plugged)


def _link() -> Link:
    """Link kind from the interfaces that are up (loopback and virtual ones ignored)."""
    import psutil  # noqa: PLC0415 - see PsutilMonitor.__init__

    up = [name for name, stats in psutil.net_if_stats().items() if stats.isup]
    if any(name.startswith(_WIFI_PREFIXES) for name in up):
        return Link.WIFI
    if any(name.startswith(_CELLULAR_PREFIXES) for name in up):
        return Link.CELLULAR
    return Link.OFFLINE
