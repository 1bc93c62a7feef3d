"""Streaming metrics of a round: how much data the trained devices held and how stale it was."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence

from fedfit.data.stream import DataStream
from fedfit.types import RoundReport, TaskResult


def with_stream_metrics(report: RoundReport, results: Sequence[TaskResult], stream: DataStream) -> RoundReport:
    """``report`` with each tier's mean buffer size and mean data age (seconds since the held
    samples arrived) over the tasks that returned an update, at their dispatch times."""
    sizes: dict[str, list[float]] = defaultdict(list)
    ages: dict[str, list[float]] = defaultdict(list)
    for r in results:
        if not r.ok:
            continue
        held = stream.buffer(r.plan.device_id, r.start_s)
        sizes[r.tier].append(float(len(held)))
        ages[r.tier].append(held.mean_age_s(r.start_s))
    return dataclasses.replace(report, buffer_size_by_tier={t: sum(v) / len(v) for t, v in sizes.items()},
                               data_age_s_by_tier={t: sum(v) / len(v) for t, v in ages.items()})
