"""The tail of the batched battery play (:mod:`fedfit.devices.lazy_batch_battery`), one device
at a time: once few rows still play, a pass costs its ≈ 75 numpy calls whatever its rows, so
each remaining row is played to its end here, on Python floats, by the operations a pass does
for it (in the same order), and its values are the pass's own, bit for bit. A low-battery
reaction's two keyed draws are drawn one by one (``lazy_battery.reaction``, as ``battery_at``
draws them: the same values as the pass's ``stem(...).uniforms``).
"""

from __future__ import annotations

from typing import NamedTuple

from fedfit.devices.counter_rng import FloatArray, Stem
from fedfit.devices.lazy_battery import _charged, reaction, reaction_steps, top_ups
from fedfit.devices.lazy_trace import _BATTERY
from fedfit.devices.trace_params import TraceParams


class Row(NamedTuple):
    """One playing row's state (``lazy_batch_battery._Play``'s columns at the row)."""

    device: int
    t: float
    level: float
    now: float
    drain: float
    gain: float
    armed: bool
    at: int
    first: int
    extra: bool
    extra_start: float
    extra_end: float


class Sessions(NamedTuple):
    """The planned sessions of every row, flattened (a row's ``width`` columns from ``first``),
    and how a row reacts to a low battery."""

    starts: FloatArray
    ends: FloatArray
    last: int
    nightly: bool
    reacting: bool


def finish(p: TraceParams, seed: int, row: Row, planned: Sessions) -> tuple[float, bool] | None:
    """The row's (level, charging) at its ``t``, played on from its state one session a step;
    ``None`` when it needs a second low-battery reaction while the first still waits (the
    pass hands such a device to ``battery_at``)."""
    t, level, now, drain, gain, armed, at = row.t, row.level, row.now, row.drain, row.gain, row.armed, row.at
    extra, extra_start, extra_end = row.extra, row.extra_start, row.extra_end
    while True:
        listed = row.first + min(at, planned.last)
        start, end = float(planned.starts[listed]), float(planned.ends[listed])
        take_extra = extra and (extra_start < start or (extra_start == start and extra_end < end))
        if take_extra:
            start, end = extra_start, extra_end
        start, end = max(start, now), max(end, now)
        if planned.reacting and armed:
            low_at = now + max(0.0, level - p.low_battery) / drain
            if low_at < min(start, t):
                if extra:
                    return None
                extra = True
                (extra_start, extra_end), armed = reaction((seed, row.device, _BATTERY), low_at, p), False
                continue
        if take_extra:
            extra = False
        else:
            at += 1
        if t < start:
            return max(0.0, level - drain * (t - now)), False
        drained = max(0.0, level - drain * (start - now))
        if t < end:
            return _charged(drained, t - start, gain, p), True
        level, now, armed = _charged(drained, end - start, gain, p), end, planned.nightly


def _reactions(p: TraceParams, keys: Stem, low_at: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The top-up session (start, end) each device plugs in for after its battery fell low at
    ``low_at`` (``lazy_battery.top_ups``, the keyed draws together); ``keys``: the devices'
    ``stem(seed, ids, _BATTERY, _REACT)``, hashed once for the play's every pass."""
    step = keys.then(reaction_steps(low_at, p))
    return top_ups(low_at, step.uniforms(2), step.uniforms(), p)
