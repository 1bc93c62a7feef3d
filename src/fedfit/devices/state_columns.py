"""The registry's hot state fields as numpy columns (struct-of-arrays), one row per device.

A registry of a million devices keeps each device's last reported
:class:`~fedfit.types.DeviceState` (the full value, what planners read) and, alongside, the
fields that selection and bookkeeping scan for many devices at once as one numpy array each:
the virtual time of the last report, online, charging, battery fraction, free memory and link.
A round's check-in writes them for all its devices in a few array assignments, and
:meth:`StateColumns.rows` reads any set of devices back as arrays without touching the
per-device values.

Encodings: ``reported_at_s`` is ``NaN`` for a device that never reported; ``battery_fraction``
is ``NaN`` and ``charging`` is ``-1`` where the device does not know (mains power); ``link``
indexes :data:`LINKS`.

>>> from fedfit.types import DeviceState, Link, Thermal
>>> columns = StateColumns()
>>> columns.append(), columns.append()
(0, 1)
>>> s = DeviceState(free_memory_bytes=2**30, battery_fraction=0.5, charging=True, temperature_c=30.0,
...                 thermal=Thermal.NOMINAL, link=Link.CELLULAR, bandwidth_bps=1e7, online=True)
>>> columns.write(np.array([1]), [s], at_s=60.0).tolist()
[True]
>>> hot = columns.rows(np.array([0, 1]))
>>> hot.reported_at_s.tolist(), hot.charging.tolist(), [LINKS[i] for i in hot.link.tolist()][1]
([nan, 60.0], [-1, 1], <Link.CELLULAR: 'cellular'>)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fedfit.types import DeviceState, Link

#: ``link`` codes: the index of each link in this tuple.
LINKS = (Link.WIFI, Link.CELLULAR, Link.OFFLINE)
_LINK_CODE = {link: i for i, link in enumerate(LINKS)}

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Int8Array = npt.NDArray[np.int8]


@dataclass(frozen=True, slots=True)
class HotStates:
    """The hot fields of some devices' last reports, one array entry per device asked for.

    Attributes:
        reported_at_s: virtual time of the last report (``NaN``: never reported).
        online: whether it was online (``False`` before any report).
        charging: 1 charging, 0 not, -1 unknown or never reported.
        battery_fraction: battery level in [0, 1] (``NaN``: unknown or never reported).
        free_memory_bytes: free memory it reported (0 before any report).
        link: index into :data:`LINKS` (``Link.OFFLINE`` before any report).
    """

    reported_at_s: FloatArray
    online: BoolArray
    charging: Int8Array
    battery_fraction: FloatArray
    free_memory_bytes: IntArray
    link: Int8Array


class ColumnStates(list[DeviceState]):
    """Device states that come with their hot fields as columns (a batch computed in numpy, in
    :class:`HotStates` form; ``reported_at_s`` unused): :meth:`StateColumns.write` stores the
    columns instead of reading each state back. The columns describe the list as built."""

    __slots__ = ("columns",)

    def __init__(self, states: Sequence[DeviceState], columns: HotStates) -> None:
        super().__init__(states)
        self.columns = columns

    def replaced(self, at: Sequence[int], states: Sequence[DeviceState]) -> ColumnStates:
        """A copy with the states at positions ``at`` replaced by ``states`` (their columns too)."""
        out = ColumnStates(self, HotStates(*(getattr(self.columns, name).copy() for name in HotStates.__slots__)))
        for i, state in zip(at, states, strict=True):
            out[i] = state
        write_hot(out.columns, np.array(at, dtype=np.int64), states)
        return out


class StateColumns:
    """Growable numpy columns of the hot state fields, one row per enrolled device."""

    def __init__(self) -> None:
        self._n = 0
        self._cols = _empty(0)

    def __len__(self) -> int:
        return self._n

    def append(self) -> int:
        """Add a row for a device that has not reported; returns its row index."""
        if self._n == len(self._cols.online):  # amortised doubling, as a list grows
            bigger = _empty(max(16, 2 * self._n))
            for name in HotStates.__slots__:
                getattr(bigger, name)[: self._n] = getattr(self._cols, name)[: self._n]
            self._cols = bigger
        self._n += 1
        return self._n - 1

    def reported_at(self, row: int) -> float | None:
        """Virtual time of the row's last report; ``None`` if it never reported."""
        at = float(self._cols.reported_at_s[row])
        return None if at != at else at

    def write(self, rows: IntArray, states: Sequence[DeviceState], at_s: float | Sequence[float]) -> BoolArray:
        """Store ``states`` reported at ``at_s`` (one time, or one per row) in ``rows`` where they
        are not older than what is held (never reported, or reported at or before ``at_s``);
        returns the mask of rows written."""
        times = np.broadcast_to(np.asarray(at_s, dtype=np.float64), rows.shape)
        held = self._cols.reported_at_s[rows]
        keep = np.isnan(held) | (held <= times)
        if not keep.all():
            rows, times = rows[keep], times[keep]
        c = self._cols
        c.reported_at_s[rows] = times
        if isinstance(states, ColumnStates) and len(states) == len(states.columns.online):
            hot = states.columns
            for name in HotStates.__slots__[1:]:  # reported_at_s set above
                getattr(c, name)[rows] = getattr(hot, name) if keep.all() else getattr(hot, name)[keep]
        else:
            write_hot(c, rows, [s for s, k in zip(states, keep.tolist()) if k] if not keep.all() else states)
        return keep

    def write_one(self, row: int, state: DeviceState, at_s: float) -> bool:
        """:meth:`write` of one row (scalar assignments); returns whether it was written."""
        c = self._cols
        held = float(c.reported_at_s[row])
        if held == held and at_s < held:
            return False
        c.reported_at_s[row], c.online[row], c.free_memory_bytes[row] = at_s, state.online, state.free_memory_bytes
        c.charging[row] = -1 if state.charging is None else int(state.charging)
        c.battery_fraction[row] = np.nan if state.battery_fraction is None else state.battery_fraction
        c.link[row] = _LINK_CODE[state.link]
        return True

    def rows(self, rows: IntArray) -> HotStates:
        """The hot fields of ``rows`` (copies)."""
        c = self._cols
        return HotStates(*(getattr(c, name)[rows] for name in HotStates.__slots__))


def write_hot(c: HotStates, rows: IntArray, states: Sequence[DeviceState]) -> None:
    """Each state's hot fields (all but ``reported_at_s``) into ``c`` at ``rows``."""
    c.online[rows] = [s.online for s in states]
    c.charging[rows] = [-1 if s.charging is None else int(s.charging) for s in states]
    c.battery_fraction[rows] = [np.nan if s.battery_fraction is None else s.battery_fraction for s in states]
    c.free_memory_bytes[rows] = [s.free_memory_bytes for s in states]
    c.link[rows] = [_LINK_CODE[s.link] for s in states]


def _empty(n: int) -> HotStates:
    return HotStates(reported_at_s=np.full(n, np.nan), online=np.zeros(n, dtype=np.bool_),
                     charging=np.full(n, -1, dtype=np.int8), battery_fraction=np.full(n, np.nan),
                     free_memory_bytes=np.zeros(n, dtype=np.int64),
                     link=np.full(n, _LINK_CODE[Link.OFFLINE], dtype=np.int8))
