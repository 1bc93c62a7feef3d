"""Shared pieces of the fault suites: a small run, and how to compare two run directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fedfit.config import ExperimentConfig, parse_config

#: A run small enough to kill at every phase: 3 rounds, a checkpoint after each (plots off: slow).
SMALL: dict[str, Any] = {
    "name": "faults", "seed": 3,
    "data": {"dataset": "digits", "partition": {"kind": "iid"}, "max_train_samples": 300, "max_test_samples": 60},
    "model": {"name": "logreg"},
    "fleet": {"tiers": {"flagship_phone": 2, "older_phone": 2}},
    "training": {"batch_size": 8, "max_steps": 2},
    "orchestration": {"rounds": 3, "clients_per_round": 3},
    "output": {"plots": False, "progress": False, "checkpoint_every": 1},
}


def small_config(**sections: dict[str, Any]) -> ExperimentConfig:
    raw = {k: dict(v) if isinstance(v, dict) else v for k, v in SMALL.items()}
    for key, value in sections.items():
        raw[key] = {**raw.get(key, {}), **value}
    return parse_config(raw)


def _metrics(run_dir: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "wall_time_s"} for r in rows]


def _summary(run_dir: Path) -> dict[str, Any]:
    return {k: v for k, v in json.loads((run_dir / "summary.json").read_text()).items() if "wall" not in k}


def assert_same_run(got: Path, want: Path) -> None:
    """``got`` holds the same finished run as ``want``: logs, model and summary (wall times aside)."""
    assert _metrics(got) == _metrics(want)
    assert (got / "events.jsonl").read_bytes() == (want / "events.jsonl").read_bytes()
    for name in ("model.safetensors", "model.json", "channel_stats.safetensors", "checkpoint.safetensors"):
        if name == "checkpoint.safetensors":
            continue  # holds wall times
        assert (got / name).read_bytes() == (want / name).read_bytes(), name
    assert _summary(got) == _summary(want)
    for plot in ("accuracy.png", "participation.png", "failures.png", "batching_timeline.png"):
        assert (got / plot).is_file() == (want / plot).is_file(), plot
    assert not [p.name for p in got.iterdir() if p.name.endswith(".tmp") or ".tmp." in p.name]
