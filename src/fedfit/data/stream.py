"""Streaming data: samples arrive at each device over virtual time into a bounded buffer.

DYNAMITE's streaming setting (Liu et al. 2023, arXiv 2310.14906): device i starts with
``initial`` samples and receives more at its tier's rate (one every ``1 / rate`` seconds) plus
``burst_size`` at once every ``burst_every_s``; it keeps at most ``buffer_size`` of them and
trains on what it holds. When the buffer is full an arrival replaces:

* ``fifo``: the oldest sample;
* ``reservoir``: a uniformly random slot with probability B / k for the k-th arrival
  (Vitter's Algorithm R: the buffer stays a uniform sample of everything seen);
* ``random``: a uniformly random slot, always.

Arrivals walk through the device's own partition in a seeded order (cycling when exhausted).
Concept drift: with ``drift_at_s`` set, arrivals before it come from the device's samples of
the lower half of the classes and after it from the upper half (all samples when a half is
empty), so the label mix shifts at that moment. Everything is a pure function of (seed,
device, t): the same buffer in any process and after a resume.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch

Replacement = Literal["fifo", "reservoir", "random"]


@dataclass(frozen=True, slots=True)
class StreamSpec:
    """How samples arrive and are kept (picklable; every device's rate given).

    Attributes:
        rate_per_s: arrivals per virtual second, per device id.
        buffer_size: B, samples a device keeps.
        replacement: what an arrival replaces in a full buffer.
        initial: samples a device holds at t = 0 (≥ 1).
        burst_every_s: seconds between bursts; ``None``: no bursts.
        burst_size: samples arriving at once in each burst.
        drift_at_s: virtual time the label mix shifts; ``None``: no drift.
        seed: the experiment seed.
    """

    rate_per_s: tuple[float, ...]
    buffer_size: int
    replacement: Replacement = "fifo"
    initial: int = 16
    burst_every_s: float | None = None
    burst_size: int = 0
    drift_at_s: float | None = None
    seed: int = 0


@dataclass(frozen=True, slots=True)
class Buffer:
    """What a device holds at a moment.

    Attributes:
        indices: positions in the device's partition of the samples held.
        arrived_s: the virtual time each held sample arrived.
        seen: samples that have arrived so far.
    """

    indices: tuple[int, ...]
    arrived_s: tuple[float, ...]
    seen: int

    def __len__(self) -> int:
        return len(self.indices)

    def mean_age_s(self, now_s: float) -> float:
        """Mean seconds since the held samples arrived (how stale the trained data is)."""
        return now_s - sum(self.arrived_s) / len(self.arrived_s) if self.arrived_s else 0.0


def arrival_times(rate_per_s: float, initial: int, until_s: float, burst_every_s: float | None = None,
                  burst_size: int = 0) -> list[float]:
    """Arrival times up to ``until_s``: ``initial`` at 0, one every 1/rate, bursts on top.

    >>> arrival_times(0.5, 2, 5.0, burst_every_s=3.0, burst_size=2)
    [0.0, 0.0, 2.0, 3.0, 3.0, 4.0]
    """
    times = [0.0] * initial
    if rate_per_s > 0:
        times += [k / rate_per_s for k in range(1, math.floor(until_s * rate_per_s + 1e-9) + 1)]
    if burst_every_s:
        times += [m * burst_every_s for m in range(1, math.floor(until_s / burst_every_s + 1e-9) + 1)
                  for _ in range(burst_size)]
    return sorted(times)


def replace_into(replacement: Replacement, size: int, arrivals: int, rng: random.Random) -> list[int | None]:
    """For each of ``arrivals`` arrivals, the buffer slot it takes (``None``: discarded).

    Slots fill in order while the buffer has room; FIFO then cycles through them (the slot
    written longest ago holds the oldest sample).

    >>> replace_into("fifo", 2, 5, random.Random(0))
    [0, 1, 0, 1, 0]
    """
    slots: list[int | None] = []
    for k in range(arrivals):
        if k < size:
            slots.append(k)
        elif replacement == "fifo":
            slots.append(k % size)
        elif replacement == "reservoir":
            j = rng.randrange(k + 1)
            slots.append(j if j < size else None)
        else:
            slots.append(rng.randrange(size))
    return slots


class DataStream:
    """Every device's buffer at any virtual time (pure in (spec, labels, device, t); cached).

    Args:
        spec: the arrival and buffer parameters.
        labels: each device's partition labels (they set the drift's two label halves).
        num_classes: classes in the data set.
    """

    def __init__(self, spec: StreamSpec, labels: Sequence[torch.Tensor], num_classes: int) -> None:
        self.spec, self.num_classes = spec, num_classes
        self._orders = [self._order(d, y) for d, y in enumerate(labels)]
        self._cache: dict[tuple[int, float], Buffer] = {}

    def buffer(self, device: int, at_s: float) -> Buffer:
        """What ``device`` holds at virtual time ``at_s``."""
        key = (device, at_s)
        if key not in self._cache:
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[key] = self._buffer(device, at_s)
        return self._cache[key]

    def _order(self, device: int, labels: torch.Tensor) -> tuple[list[int], list[int]]:
        """The seeded order arrivals walk through (before and after the drift)."""
        gen = torch.Generator().manual_seed(self.spec.seed * 7919 + device)
        order = torch.randperm(len(labels), generator=gen).tolist()
        if self.spec.drift_at_s is None:
            return order, order
        low = [i for i in order if int(labels[i]) < self.num_classes // 2]
        high = [i for i in order if int(labels[i]) >= self.num_classes // 2]
        return (low or order), (high or order)

    def _buffer(self, device: int, at_s: float) -> Buffer:
        s = self.spec
        times = arrival_times(s.rate_per_s[device], s.initial, at_s, s.burst_every_s, s.burst_size)
        before, after = self._orders[device]
        cut = len(times) if s.drift_at_s is None else bisect.bisect_left(times, s.drift_at_s)
        pool = [before[k % len(before)] for k in range(cut)] + [after[k % len(after)] for k in range(len(times) - cut)]
        rng = random.Random(s.seed * 1_000_003 + device)
        held: list[tuple[int, float]] = []
        for k, slot in enumerate(replace_into(s.replacement, s.buffer_size, len(times), rng)):
            if slot is None:
                continue
            if slot == len(held):
                held.append((pool[k], times[k]))
            else:
                held[slot] = (pool[k], times[k])
        return Buffer(tuple(i for i, _ in held), tuple(t for _, t in held), len(times))

    def held(self, device: int, at_s: float) -> tuple[int, ...]:
        """The samples (positions in its partition) ``device`` holds at ``at_s``."""
        return self.buffer(device, at_s).indices

    def size(self, device: int, at_s: float) -> int:
        """Samples ``device`` holds at ``at_s``."""
        return len(self.buffer(device, at_s))
