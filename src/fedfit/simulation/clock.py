"""A discrete-event queue on the virtual clock.

Events pop in order of virtual time; ties pop in insertion order, so the trace is deterministic.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass
class EventQueue(Generic[T]):
    """Min-heap of (virtual time, insertion order, item)."""

    _heap: list[tuple[float, int, T]] = field(default_factory=list)
    _order: itertools.count[int] = field(default_factory=itertools.count)

    def push(self, at_s: float, item: T) -> None:
        """Schedule ``item`` at virtual time ``at_s``."""
        heapq.heappush(self._heap, (at_s, next(self._order), item))

    def push_many(self, times: Sequence[float], items: Sequence[T]) -> None:
        """``push`` of each item at its time, in order (one heap pass: the pop order is the same,
        since every event's (time, insertion order) differs)."""
        heap = self._heap
        events = zip(times, self._order, items)  # zip stops at the end of ``times`` before drawing an order
        if len(heap) > 4 * len(times):  # a few events into a long queue: one push each
            for event in events:
                heapq.heappush(heap, event)
            return
        heap.extend(events)
        heapq.heapify(heap)

    def pop(self) -> tuple[float, T]:
        """Remove and return the earliest (time, item). Raises ``IndexError`` when empty."""
        at_s, _, item = heapq.heappop(self._heap)
        return at_s, item

    def pop_due(self, until_s: float) -> T | None:
        """Remove and return the earliest item if it is due at ``until_s`` or before; else ``None``."""
        heap = self._heap
        return heapq.heappop(heap)[2] if heap and heap[0][0] <= until_s else None

    def popping_due(self, until_s: float) -> Iterator[T]:
        """:meth:`pop_due` again and again: each item due at ``until_s`` or before, earliest first,
        popped as it is reached (an item not reached stays queued)."""
        heap, pop = self._heap, heapq.heappop
        while heap and heap[0][0] <= until_s:
            yield pop(heap)[2]

    def peek_time(self) -> float | None:
        """Time of the earliest event, or ``None`` when empty."""
        return self._heap[0][0] if self._heap else None

    def items(self) -> list[tuple[float, T]]:
        """Every (time, item) in pop order, without removing them."""
        return [(at_s, item) for at_s, _, item in sorted(self._heap, key=lambda e: (e[0], e[1]))]

    def drain(self) -> list[T]:
        """Remove every event, earliest first."""
        items = [heapq.heappop(self._heap)[2] for _ in range(len(self._heap))]
        return items

    def __len__(self) -> int:
        return len(self._heap)
