"""The dynamic-batching timeline plot is written for runs with successes, pauses and crashes,
and its points read the same from a task result as from the result's events.jsonl record."""

import json
from pathlib import Path

import torch

from fedfit.report.plots import TimelinePoint, plot_batching_timeline
from fedfit.report.summary import event_record
from fedfit.types import Failure, FailureCause, TaskCost, TaskResult, TrainPlan, Update


def _result(device: int, start_s: float, outcome: Update | Failure, micro: int) -> TaskResult:
    cost = TaskCost(0.1, 1.0, 0.1, 1.0, 1000, 10, 10, 1e6)
    return TaskResult(TrainPlan(device, 0, micro, accumulation_steps=2), "older_phone", start_s, start_s + 1.2,
                      outcome, cost, free_memory_bytes=2**20)


def test_timeline_plot_is_written(tmp_path: Path) -> None:
    ok = Update(0, 0, {"w": torch.zeros(1)}, 10, 10, 5, 4, 2, 0.5)
    results = [_result(0, 0.0, ok, 4), _result(1, 60.0, Failure(1, 0, FailureCause.DECLINED, "thermal: hot"), 4),
               _result(2, 120.0, Failure(2, 0, FailureCause.OUT_OF_MEMORY, "peak > free"), 32)]
    path = tmp_path / "timeline.png"
    plot_batching_timeline([TimelinePoint.of(r) for r in results], path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_point_from_record_equals_point_from_result() -> None:
    result = _result(2, 120.0, Failure(2, 0, FailureCause.OUT_OF_MEMORY, "peak > free"), 32)
    record = json.loads(json.dumps(event_record(result)))
    assert TimelinePoint.of_record(record) == TimelinePoint.of(result)
    assert TimelinePoint.of(result) == TimelinePoint("older_phone", 120.0, False, FailureCause.OUT_OF_MEMORY,
                                                     32, 64, 2**20)
