"""The run directory: resolved config, metrics.jsonl, events.jsonl, summary.json, plots."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from fedfit.errors import CheckpointError
from fedfit.report.plots import (
    TimelinePoint, plot_accuracy, plot_batching_timeline, plot_failures, plot_participation,
)
from fedfit.report.summary import event_record, report_record
from fedfit.types import RoundReport, TaskResult


class RunDirectory:
    """Writes one run's files as it goes; close it to flush.

    Args:
        path: the run directory (created).
        resolved_config: written to ``config.yaml``.
        log_bytes: reopen the logs of an interrupted run, cut back to these sizes of
            ``metrics.jsonl`` and ``events.jsonl`` (what its checkpoint had logged), and append;
            ``None``: start them empty.
    """

    def __init__(self, path: Path, resolved_config: dict[str, Any], log_bytes: tuple[int, int] | None = None) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        (path / "config.yaml").write_text(yaml.safe_dump(resolved_config, sort_keys=False))
        self._timeline: list[TimelinePoint] = []
        if log_bytes is None:
            self._metrics: TextIO = (path / "metrics.jsonl").open("w")
            self._events: TextIO = (path / "events.jsonl").open("w")
            return
        self._metrics = _reopen(path / "metrics.jsonl", log_bytes[0])
        self._events = _reopen(path / "events.jsonl", log_bytes[1])
        with (path / "events.jsonl").open() as events:
            self._timeline = [TimelinePoint.of_record(json.loads(line)) for line in events]

    def log_round(self, report: RoundReport, results: Sequence[TaskResult],
                  extra: dict[str, Any] | None = None) -> None:
        """Append one round's metrics line (with ``extra`` keys) and its task events."""
        self._metrics.write(json.dumps(report_record(report) | (extra or {})) + "\n")
        for res in results:
            self._events.write(json.dumps(event_record(res)) + "\n")
            self._timeline.append(TimelinePoint.of(res))
        self._metrics.flush()
        self._events.flush()

    def __enter__(self) -> RunDirectory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the logs (also on error: what was logged stays on disk)."""
        self._metrics.close()
        self._events.close()

    def log_bytes(self) -> tuple[int, int]:
        """Bytes written so far to ``metrics.jsonl`` and ``events.jsonl`` (for a checkpoint)."""
        return self._metrics.tell(), self._events.tell()

    def finish(self, summary: dict[str, Any], reports: Sequence[RoundReport], *, name: str,
               target: float, plots: bool) -> None:
        """Write summary.json and the plots; close the logs."""
        self.close()
        (self.path / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        if plots and reports:
            plot_accuracy({name: reports}, self.path / "accuracy.png", target)
            plot_participation(reports, self.path / "participation.png")
            plot_failures(reports, self.path / "failures.png")
            plot_batching_timeline(self._timeline, self.path / "batching_timeline.png")


def _reopen(path: Path, size: int) -> TextIO:
    """``path`` opened for appending after cutting it back to ``size`` bytes.

    Raises:
        CheckpointError: the file is missing or shorter than ``size`` (not the run that was checkpointed).
    """
    if not path.exists() or path.stat().st_size < size:
        raise CheckpointError(f"{path}: missing or shorter than the checkpoint's {size} bytes")
    with path.open("r+b") as f:
        f.truncate(size)
    return path.open("a")
