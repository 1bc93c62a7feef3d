"""The run directory: resolved config, metrics.jsonl, events.jsonl, summary.json, plots."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from fedfit.report.plots import plot_accuracy, plot_batching_timeline, plot_failures, plot_participation
from fedfit.report.summary import event_record, report_record
from fedfit.types import Failure, RoundReport, TaskResult, Update


class RunDirectory:
    """Writes one run's files as it goes; close it to flush."""

    def __init__(self, path: Path, resolved_config: dict[str, Any]) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        (path / "config.yaml").write_text(yaml.safe_dump(resolved_config, sort_keys=False))
        self._metrics: TextIO = (path / "metrics.jsonl").open("w")
        self._events: TextIO = (path / "events.jsonl").open("w")
        self._results: list[TaskResult] = []

    def log_round(self, report: RoundReport, results: Sequence[TaskResult]) -> None:
        """Append one round's metrics line and its task events."""
        self._metrics.write(json.dumps(report_record(report)) + "\n")
        for res in results:
            self._events.write(json.dumps(event_record(res)) + "\n")
            self._results.append(dataclasses.replace(res, outcome=_without_params(res.outcome)))
        self._metrics.flush()
        self._events.flush()

    def finish(self, summary: dict[str, Any], reports: Sequence[RoundReport], *, name: str,
               target: float, plots: bool) -> None:
        """Write summary.json and the plots; close the logs."""
        self._metrics.close()
        self._events.close()
        (self.path / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        if plots and reports:
            plot_accuracy({name: reports}, self.path / "accuracy.png", target)
            plot_participation(reports, self.path / "participation.png")
            plot_failures(reports, self.path / "failures.png")
            plot_batching_timeline(self._results, self.path / "batching_timeline.png")


def _without_params(outcome: Update | Failure) -> Update | Failure:
    """The outcome without its tensors (the timeline needs only the plan and the cause)."""
    return dataclasses.replace(outcome, params={}) if isinstance(outcome, Update) else outcome
