"""The dynamic-batching timeline plot is written for runs with successes, pauses and crashes."""

from pathlib import Path

import torch

from fedfit.report.plots import plot_batching_timeline
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
    plot_batching_timeline(results, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
