"""Lazy batteries of many devices at once: :mod:`fedfit.devices.lazy_battery` for an array of
devices (one row each), in numpy, bit for bit.

Charge sessions are drawn into one padded array (a row per device: the three days that matter
and every Poisson top-up in one keyed draw each, sorted per row with ``np.lexsort``) and played
forward together, one session a pass. The devices' tiers may differ in their rates: the drain
and charge rates are per row (:class:`~fedfit.devices.lazy_batch.Rows`); a row's values are the
scalar path's own, so every float operation is the one ``battery_at`` does for that device.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from fedfit.devices.counter_rng import FloatArray, Stem, stem
from fedfit.devices.lazy_battery import _ANCHOR, _NIGHTLY, _PLUGIN, _REACT, DAY_S, battery_at, poisson_counts
from fedfit.devices.lazy_battery_tail import Row, Sessions, _reactions, finish
from fedfit.devices.lazy_trace import _BATTERY
from fedfit.devices.trace_params import TraceParams

if TYPE_CHECKING:
    from fedfit.devices.lazy_batch import Rows

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def _floor(x: FloatArray) -> IntArray:
    return np.floor(x).astype(np.int64)


def levels(p: TraceParams, rows: Rows, seed: int, ids: IntArray, t: FloatArray,
           offset_h: FloatArray) -> tuple[FloatArray, BoolArray]:
    """``lazy_battery.battery_at`` of every device at its ``t``: (level, charging)."""
    keys = stem(seed, ids, _BATTERY)  # (seed, device, _BATTERY) hashed once for every battery draw
    planned = sessions(p, rows, seed, ids, t, offset_h, keys)
    anchors = keys.uniforms(_ANCHOR, _floor(t / DAY_S) - 1)
    return batteries(p, rows, seed, ids, t, planned, anchors, keys)


def sessions(p: TraceParams, rows: Rows, seed: int, ids: IntArray, t: FloatArray, offset_h: FloatArray,
             battery: Stem) -> tuple[FloatArray, FloatArray]:
    """``lazy_battery.sessions`` of every device for its ``t``'s day, less those that cannot
    change its level at ``t``: session starts and ends, one row per device in the order of the
    sorted ``(start, end)`` tuples, padded with infinities (at least one column). The three days
    that matter are drawn together (a column each).

    A session that ends by the anchor (the midnight ``battery_at`` plays from) is clamped to an
    empty one there, which leaves the level, the time and the low-battery reaction as they were;
    one that starts after ``t`` is never reached. Both are dropped (as infinities), so the
    devices are played forward in as many passes as the most sessions any of them lives through.
    ``battery``: ``stem(seed, ids, _BATTERY)``."""
    day = _floor(t / DAY_S)
    days = np.stack([day - 2, day - 1, day], axis=1)
    assert not isinstance(battery.state, int)
    keys = Stem((seed, ids[:, None], _BATTERY), battery.state[:, None])  # a row per device, for its days' draws
    starts, ends = _windows(p, rows, keys, days, offset_h)
    if rows.energy == "nightly":
        plug_starts, plug_ends = _plugins(p, seed, ids, keys, days)
        starts, ends = np.concatenate([starts, plug_starts], axis=1), np.concatenate([ends, plug_ends], axis=1)
    unused = (ends <= ((day - 1) * DAY_S)[:, None]) | (starts > t[:, None])
    starts, ends = np.where(unused, np.inf, starts), np.where(unused, np.inf, ends)
    none = np.full((len(ids), 1), np.inf)
    starts, ends = np.concatenate([starts, none], axis=1), np.concatenate([ends, none], axis=1)
    order = np.lexsort((ends, starts))  # along each row: by start, then end (tuple order)
    starts, ends = np.take_along_axis(starts, order, axis=1), np.take_along_axis(ends, order, axis=1)
    width = int(np.isfinite(starts).sum(axis=1).max(initial=0)) + 1
    return starts[:, :width], ends[:, :width]


def _planned(starts: FloatArray, ends: FloatArray, row: int) -> tuple[tuple[float, float], ...]:
    """Row ``row`` of :func:`sessions` as ``lazy_battery.sessions`` gives it."""
    return tuple((s, e) for s, e in zip(starts[row].tolist(), ends[row].tolist()) if s != math.inf)


def _windows(p: TraceParams, rows: Rows, keys: Stem, days: IntArray,
             offset_h: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Each device's bedtime (or harvesting) session of each of its ``days`` (a row per device,
    a column per day; infinities on a day without one); ``keys``: ``(seed, ids[:, None], _BATTERY)``."""
    nightly, offset = keys.then(_NIGHTLY, days), offset_h[:, None]
    has = nightly.uniforms(0) < p.nightly_probability
    if rows.energy == "harvest":
        lo, hi = p.harvest_hours
        start_h, length_h = 24.0 * days + lo + offset, np.full(days.shape, hi - lo)
    else:
        lo, hi = p.nightly_duration_h
        start_h = 24.0 * days + p.nightly_start_h + offset + p.nightly_start_sd_h * nightly.normals()
        length_h = lo + (hi - lo) * nightly.uniforms(1)
    return np.where(has, start_h * 3600.0, np.inf), np.where(has, (start_h + length_h) * 3600.0, np.inf)


def _plugins(p: TraceParams, seed: int, ids: IntArray, keys: Stem, days: IntArray) -> tuple[FloatArray, FloatArray]:
    """Each device's Poisson top-ups of each of its ``days`` (count by inversion of the Poisson
    CDF): starts and ends, a row per device (infinities where it has fewer than the most);
    ``keys``: ``(seed, ids[:, None], _BATTERY)``."""
    count = poisson_counts(keys.uniforms(_PLUGIN, days, -1), p.plugins_per_day)
    counts = count.ravel()  # row-major: device by device, its days in order
    total = int(counts.sum())
    who, day = np.repeat(np.repeat(ids, days.shape[1]), counts), np.repeat(days.ravel(), counts)
    i = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)  # the top-up's index in its day
    lo, hi = p.plugin_duration_s
    top_up = stem(seed, who, _BATTERY, _PLUGIN, day, i)
    start = (day + top_up.uniforms()) * DAY_S
    length = np.maximum(p.step_s, lo + (hi - lo) * top_up.uniforms(1))
    per_device = count.sum(axis=1)
    rows = np.repeat(np.arange(len(ids)), per_device)
    cols = np.arange(total) - np.repeat(np.cumsum(per_device) - per_device, per_device)
    starts = np.full((len(ids), int(per_device.max(initial=0))), np.inf)
    ends = np.full(starts.shape, np.inf)
    starts[rows, cols], ends[rows, cols] = start, start + length
    return starts, ends


def batteries(p: TraceParams, rows: Rows, seed: int, ids: IntArray, t: FloatArray,
              planned: tuple[FloatArray, FloatArray], anchors: FloatArray,
              battery: Stem) -> tuple[FloatArray, BoolArray]:
    """``lazy_battery.battery_at`` of every device: its sessions (:func:`sessions`) played
    forward together, one session a pass. A user's reaction to a low battery (a top-up session
    inserted mid-play) is held as each device's one extra session, drawn and taken or set aside
    in the pass the battery falls low (:meth:`_Play._react`); a device that would need a second
    one while the first still waits is played by ``battery_at`` itself. ``battery``:
    ``stem(seed, ids, _BATTERY)``.

    Most devices live through a few sessions and a few through many, so once at most half the
    rows still play they are packed (:class:`_Play`): every operation is elementwise, so a row's
    values are the same whichever rows share its arrays. Once at most ``TAIL_BELOW`` rows play,
    each is played to its end alone (:mod:`fedfit.devices.lazy_battery_tail`)."""
    starts, ends = planned
    lo, hi = p.start_battery
    play = _Play(p, rows, battery.then(_REACT), t, lo + (hi - lo) * anchors, starts.shape[1])
    listed_starts, listed_ends = np.ascontiguousarray(starts).ravel(), np.ascontiguousarray(ends).ravel()
    with np.errstate(invalid="ignore", divide="ignore"):  # finished devices carry infinities along
        while (live := int(np.count_nonzero(play.active))) > 0:
            if live <= TAIL_BELOW and play.finish(p, seed, Sessions(listed_starts, listed_ends, play.last, play.nightly,
                                                                     play.nightly and play.draining)):
                break
            if live <= len(play.active) // 2 and len(play.active) >= PACK_FROM:
                play.pack()
            play.step(p, seed, listed_starts, listed_ends)
    found, charging, scalar = play.results()
    for i in np.flatnonzero(scalar).tolist():
        found[i], charging[i] = battery_at((seed, int(ids[i]), _BATTERY), float(t[i]), p, rows.behaviour(i),
                                           _planned(starts, ends, i), float(anchors[i]))
    return found, charging


#: Rows from which a play packs its still-playing rows (below, a pass costs its calls, not its rows).
PACK_FROM = 64
#: Playing rows from which on the play's tail is played one row at a time (:mod:`lazy_battery_tail`).
TAIL_BELOW = 48


class _Play:
    """The state of :func:`batteries`' play, a row per device still in it (``rows``: their
    indices among the devices), and what it found for the devices no longer in it."""

    def __init__(self, p: TraceParams, rows: Rows, react: Stem, t: FloatArray, level: FloatArray,
                 width: int) -> None:
        n, ids = len(t), react.keys[1]
        assert not isinstance(ids, int) and not isinstance(react.state, int)
        self.nightly, self.draining = rows.energy == "nightly", rows.draining
        self.rows: IntArray | None = None  # every device, in order
        self.found, self.charging = np.zeros(n), np.zeros(n, dtype=np.bool_)
        self.scalar = np.zeros(n, dtype=np.bool_)
        self.out = (np.zeros(n), np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_))
        self.ids, self.t, self.level, self.now = ids, t, level, (_floor(t / DAY_S) - 1) * DAY_S
        self.react = react.state  # each row's (seed, id, _BATTERY, _REACT) hashed, for its reactions' draws
        self.drain, self.gain = rows.drain, rows.gain
        self.active, self.armed = np.ones(n, dtype=np.bool_), np.full(n, self.nightly)
        self.at, self.first, self.last = np.zeros(n, dtype=np.int64), np.arange(n) * width, width - 1
        self.extra, self.extra_start, self.extra_end = np.zeros(n, dtype=np.bool_), np.full(n, np.inf), np.full(n, np.inf)

    _PACKED = ("found", "charging", "scalar", "ids", "react", "t", "level", "now", "drain", "gain", "active", "armed",
               "at", "first", "extra", "extra_start", "extra_end")

    def _keep(self) -> None:
        """Write what the rows found so far to the devices' results."""
        for out, value in zip(self.out, (self.found, self.charging, self.scalar)):
            if self.rows is None:
                out[:] = value
            else:
                out[self.rows] = value

    def pack(self) -> None:
        """Keep only the rows still playing."""
        self._keep()
        keep = np.flatnonzero(self.active)
        self.rows = keep if self.rows is None else self.rows[keep]
        for name in self._PACKED:
            setattr(self, name, getattr(self, name)[keep])

    def results(self) -> tuple[FloatArray, BoolArray, BoolArray]:
        """Each device's (level, charging, whether ``battery_at`` must play it)."""
        self._keep()
        return self.out

    def finish(self, p: TraceParams, seed: int, planned: Sessions) -> bool:
        """Play every row still playing to its end one at a time (:func:`lazy_battery_tail.finish`),
        unless some row gains nothing charging (its pass divides by that gain)."""
        playing = np.flatnonzero(self.active)
        if not bool((self.gain[playing] > 0.0).all()):
            return False
        columns = (self.ids, self.t, self.level, self.now, self.drain, self.gain, self.armed, self.at, self.first,
                   self.extra, self.extra_start, self.extra_end)
        for i, row in zip(playing.tolist(), zip(*(column[playing].tolist() for column in columns))):
            found = finish(p, seed, Row._make(row), planned)
            if found is None:
                self.scalar[i] = True
            else:
                self.found[i], self.charging[i] = found
        self.active[playing] = False
        return True

    def step(self, p: TraceParams, seed: int, listed_starts: FloatArray, listed_ends: FloatArray) -> None:
        """One pass: every playing row takes its next session (or its pending reaction)."""
        active, armed, extra, now, level, t = self.active, self.armed, self.extra, self.now, self.level, self.t
        listed = self.first + np.minimum(self.at, self.last)  # a finished device may point past its last
        start, end = listed_starts[listed], listed_ends[listed]
        take_extra = extra.copy()
        if extra.any():  # the pending sessions' first, as sorted tuples
            extra_start, extra_end = self.extra_start, self.extra_end
            take_extra &= _sorts_first(extra_start, extra_end, start, end)
            start, end = np.where(take_extra, extra_start, start), np.where(take_extra, extra_end, end)
        popped_start, popped_end = start, end
        start, end = np.maximum(start, now), np.maximum(end, now)
        moving = active  # every playing row takes a session (a reaction holds none back)
        if self.nightly and self.draining:
            low_at = now + np.maximum(0.0, level - p.low_battery) / self.drain
            hit = active & armed & (low_at < np.minimum(start, t))
            self.scalar |= hit & extra  # a second reaction while one waits (or is the session popped)
            active &= ~(hit & self.scalar)
            react = np.flatnonzero(hit & active)
            if len(react):
                self._react(p, seed, react, low_at[react], (popped_start[react], popped_end[react]), take_extra,
                            start, end)
            armed &= ~hit
        self.at += moving & ~take_extra
        extra &= ~(moving & take_extra)
        drain, gain = self.drain, self.gain
        before = moving & (t < start)
        found = np.where(before, np.maximum(0.0, level - drain * (t - now)), self.found)
        drained = np.maximum(0.0, level - drain * (start - now))
        within = moving & ~before & (t < end)
        charged = _charged(drained, np.where(within, t, end) - start, gain, p)  # to t, or to the session's end
        self.found, self.charging = np.where(within, charged, found), self.charging | within
        active &= ~(before | within)
        ended = moving & active
        self.level, self.now = np.where(ended, charged, level), np.where(ended, end, now)
        self.armed = np.where(ended, self.nightly, armed)

    def _react(self, p: TraceParams, seed: int, react: IntArray, low_at: FloatArray,
               popped: tuple[FloatArray, FloatArray], take_extra: BoolArray, start: FloatArray,
               end: FloatArray) -> None:
        """Rows ``react`` fell low before their popped session (none had a reaction pending):
        each draws its top-up, which is pending beside the popped session, and takes at once
        whichever of the two sorts first, as ``battery_at`` pops again after the reaction (its
        re-check cannot fire: the row is disarmed), so a reaction costs its row no pass."""
        keys = Stem((seed, self.ids[react], _BATTERY, _REACT), self.react[react])
        extra_start, extra_end = _reactions(p, keys, low_at)
        self.extra[react], self.extra_start[react], self.extra_end[react] = True, extra_start, extra_end
        popped_start, popped_end = popped
        first = _sorts_first(extra_start, extra_end, popped_start, popped_end)
        now = self.now[react]
        take_extra[react] = first
        start[react] = np.maximum(np.where(first, extra_start, popped_start), now)
        end[react] = np.maximum(np.where(first, extra_end, popped_end), now)


def _charged(level: FloatArray, duration_s: FloatArray, gain_per_s: FloatArray, p: TraceParams) -> FloatArray:
    """``lazy_battery._charged`` elementwise (the same operations in the same order)."""
    taper = p.charge_taper_above
    below = level < taper
    to_taper_s = (taper - level) / gain_per_s
    direct = below & (duration_s <= to_taper_s)
    rest = np.minimum(1.0, np.where(below, taper, level) + gain_per_s / 3.0 * np.where(below, duration_s - to_taper_s,
                                                                                       duration_s))
    return np.where(direct, level + gain_per_s * duration_s, rest)


def _sorts_first(a_start: FloatArray, a_end: FloatArray, b_start: FloatArray, b_end: FloatArray) -> BoolArray:
    """Where session ``a`` sorts before ``b`` as ``(start, end)`` tuples (``battery_at``'s order)."""
    return (a_start < b_start) | ((a_start == b_start) & (a_end < b_end))
