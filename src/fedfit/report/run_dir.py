"""The run directory: resolved config, metrics.jsonl, events.jsonl, summary.json, plots.

Files fedfit rewrites (``config.yaml``, ``summary.json``, plots) are written atomically
(:mod:`fedfit.report.atomic`); the two logs are appended line by line, and a resume cuts them
back to what its checkpoint had seen. Every line is strict JSON: a non-finite number (a diverged
loss) is written as ``null`` and its key listed under ``"non_finite"``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from fedfit.errors import CheckpointError
from fedfit.report import atomic
from fedfit.report.plots import (
    TimelinePoint, plot_accuracy, plot_batching_timeline, plot_failures, plot_participation,
)
from fedfit.report.summary import event_record, report_record
from fedfit.types import RoundReport, TaskResult

#: Files a run writes into its directory (``fedfit run --force`` removes them first).
OUTPUTS = ("config.yaml", "metrics.jsonl", "events.jsonl", "summary.json", "checkpoint.safetensors",
           "model.safetensors", "model.json", "channel_stats.safetensors", "model_int.safetensors",
           "accuracy.png", "participation.png", "failures.png", "batching_timeline.png")
#: Written last: a run directory holding it is finished.
SUMMARY = "summary.json"


class RunDirectory:
    """Writes one run's files as it goes; close it to flush.

    Args:
        path: the run directory (created).
        resolved_config: written to ``config.yaml`` (atomically; left alone when unchanged).
        log_bytes: reopen the logs of an interrupted run, cut back to these sizes of
            ``metrics.jsonl`` and ``events.jsonl`` (what its checkpoint had logged), and append;
            ``None``: start them empty. Both logs are checked before anything is written.
    """

    def __init__(self, path: Path, resolved_config: dict[str, Any], log_bytes: tuple[int, int] | None = None) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        if log_bytes is not None:
            _check_log(path / "metrics.jsonl", log_bytes[0])
            _check_log(path / "events.jsonl", log_bytes[1])
        text = yaml.safe_dump(resolved_config, sort_keys=False)
        config = path / "config.yaml"
        if not config.is_file() or config.read_text(encoding="utf-8", errors="replace") != text:
            atomic.write_text(config, text)
        self._timeline: list[TimelinePoint] = []
        if log_bytes is None:
            self._metrics: TextIO = (path / "metrics.jsonl").open("w")
            self._events: TextIO = (path / "events.jsonl").open("w")
            return
        self._metrics = _reopen(path / "metrics.jsonl", log_bytes[0])
        self._events = _reopen(path / "events.jsonl", log_bytes[1])
        with (path / "events.jsonl").open() as events:
            try:
                self._timeline = [TimelinePoint.of_record(json.loads(line)) for line in events]
            except (ValueError, KeyError, TypeError) as exc:
                raise CheckpointError(f"{path / 'events.jsonl'}: damaged before the checkpoint's end ({exc})") from None

    def log_round(self, report: RoundReport, results: Sequence[TaskResult],
                  extra: dict[str, Any] | None = None) -> None:
        """Append one round's metrics line (with ``extra`` keys) and its task events."""
        self._metrics.write(strict_json(report_record(report) | (extra or {})) + "\n")
        for res in results:
            self._events.write(strict_json(event_record(res)) + "\n")
            self._timeline.append(TimelinePoint.of(res))
        self._metrics.flush()
        self._events.flush()

    def log_events(self, results: Sequence[TaskResult]) -> None:
        """Append task events that belong to no finished round (a run stopped mid-version)."""
        for res in results:
            self._events.write(strict_json(event_record(res)) + "\n")
            self._timeline.append(TimelinePoint.of(res))
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

    def plot(self, reports: Sequence[RoundReport], *, name: str, target: float) -> None:
        """Write the plots (each atomically); closes the logs."""
        self.close()
        if not reports:
            return
        atomic.write_with(self.path / "accuracy.png", lambda p: plot_accuracy({name: reports}, p, target))
        atomic.write_with(self.path / "participation.png", lambda p: plot_participation(reports, p))
        atomic.write_with(self.path / "failures.png", lambda p: plot_failures(reports, p))
        atomic.write_with(self.path / "batching_timeline.png", lambda p: plot_batching_timeline(self._timeline, p))

    def reopen_for_rounds(self) -> None:
        """Mark a finished run unfinished again (its summary removed): it is about to be extended."""
        (self.path / SUMMARY).unlink(missing_ok=True)
        atomic.fsync_dir(self.path)

    def write_summary(self, summary: dict[str, Any]) -> None:
        """Write ``summary.json`` atomically: the last file of a finished run."""
        self.close()
        atomic.write_text(self.path / SUMMARY, json.dumps(finite(summary)[0], indent=2, allow_nan=False) + "\n")


def strict_json(record: dict[str, Any]) -> str:
    """``record`` as one line of strict JSON: non-finite floats become ``null``, their keys listed
    under ``"non_finite"``.

    >>> strict_json({"loss": float("nan"), "accuracy": 0.5})
    '{"loss": null, "accuracy": 0.5, "non_finite": ["loss"]}'
    """
    try:  # the common case, every float finite: one pass in the encoder (an event a task)
        return json.dumps(record, allow_nan=False)
    except ValueError:
        pass
    clean, bad = finite(record)
    if bad:
        clean["non_finite"] = bad
    return json.dumps(clean, allow_nan=False)


def finite(value: Any, key: str = "") -> tuple[Any, list[str]]:
    """``value`` with every non-finite float replaced by ``None``, and the dotted keys replaced."""
    if isinstance(value, float) and not math.isfinite(value):
        return None, [key]
    if isinstance(value, dict):
        out, bad = {}, []
        for k, v in value.items():
            out[k], b = finite(v, f"{key}.{k}" if key else str(k))
            bad += b
        return out, bad
    if isinstance(value, list | tuple):
        pairs = [finite(v, f"{key}[{i}]") for i, v in enumerate(value)]
        return [p[0] for p in pairs], [b for p in pairs for b in p[1]]
    return value, []


def finished(path: Path) -> bool:
    """Whether the run directory holds a finished run (its summary is written last)."""
    return (path / SUMMARY).is_file()


def _check_log(path: Path, size: int) -> None:
    if not path.is_file() or path.stat().st_size < size:
        raise CheckpointError(f"{path}: missing or shorter than the checkpoint's {size} bytes")


def _reopen(path: Path, size: int) -> TextIO:
    """``path`` opened for appending after cutting it back to ``size`` bytes (checked already)."""
    with path.open("r+b") as f:
        f.truncate(size)
    return path.open("a")
