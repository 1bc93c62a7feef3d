"""A fixed reference workload, to tell a slow host from slower code in CPU timings.

The shared benchmark hosts change speed under other jobs' load by up to 2× between (and within)
runs, and :func:`time.process_time` counts a slowed process's CPU seconds as more, not as
waiting. :func:`reference_work` is a fixed amount of the kind of work a round's orchestration
does (small Python objects, dictionaries, a heap, a sort, and numpy calls on arrays of a
thousand values); timed in the same process beside a measurement, ``figure / reference`` moves
only when the measured code does, not when the host does. Its result is a checksum that fixes
the work done (a test pins it); the loop sizes were set once (about 10 ms on the 2-core
development host when it runs at its faster speed) and never change with the code measured.

    >>> reference_work() == REFERENCE_CHECKSUM
    True
"""

from __future__ import annotations

import heapq
import random
import statistics
import time
from typing import NamedTuple

import numpy as np

ROWS = 1000  #: values per pass (a round's invited devices at the 1M × 1,000 benchmark)
PASSES = 5  #: Python passes over the rows
ARRAY_CALLS = 40  #: numpy calls on arrays of ``ROWS`` values, per pass


class _Item(NamedTuple):
    key: int
    value: float
    name: str


def reference_work() -> int:
    """The fixed reference workload; returns a checksum of what it computed (always the same)."""
    rng = random.Random(20261202)
    total = 0
    for p in range(PASSES):
        items = [_Item(rng.randrange(1 << 20), rng.random(), f"d{i}") for i in range(ROWS)]
        index = {item.key: item for item in items}
        heap = [(item.value, i, item) for i, item in enumerate(items)]
        heapq.heapify(heap)
        popped = [heapq.heappop(heap)[1] for _ in range(ROWS // 2)]
        ordered = sorted(items, key=lambda item: (item.value, item.key))
        total += sum(popped) + len(index) + ordered[0].key + sum(len(item.name) for item in ordered[:100])
        values = np.fromiter((item.value for item in items), np.float64, ROWS)
        for k in range(ARRAY_CALLS // 4):
            scaled = values * (k + 1) + p
            values = np.where(scaled > k, scaled - k, scaled) / (k + 2)
            total += int(np.count_nonzero(values > 0.25))
        total += sum(1 for v in values.tolist() if v > 0.5)
    return total


#: :func:`reference_work`'s result (fixed work; checked by ``tests/test_host_reference.py``).
REFERENCE_CHECKSUM = 3974331


def reference_ms() -> float:
    """CPU milliseconds (``time.process_time``) of one :func:`reference_work`."""
    start = time.process_time()
    reference_work()
    return (time.process_time() - start) * 1e3


def normalised(figure_ms: float, reference_samples_ms: list[float]) -> float:
    """``figure_ms`` in reference workloads: divided by the median of the reference's CPU ms
    timed beside it (the same process, the same stretch of the run).

    >>> normalised(40.0, [9.0, 10.0, 30.0])
    4.0
    """
    if not reference_samples_ms or min(reference_samples_ms) <= 0:
        raise ValueError("normalising needs at least one positive reference timing")
    return figure_ms / statistics.median(reference_samples_ms)
