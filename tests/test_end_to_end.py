"""Whole runs from a config: determinism across executors, OOM in the baseline, run directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedfit.config import ExperimentConfig, default_scenario, load_config, parse_config
from fedfit.runner import run
from tests.helpers import write_fashion_like

ROOT = Path(__file__).resolve().parents[1]


def small(**sections: dict) -> ExperimentConfig:
    raw = {
        "name": "small", "seed": 3,
        "data": {"dataset": "digits", "partition": {"kind": "dirichlet", "alpha": 1.0},
                 "max_train_samples": 900, "max_test_samples": 200},
        "model": {"name": "cnn"},
        "fleet": {"tiers": {"flagship_phone": 4, "midrange_phone": 4, "older_phone": 4}, "catalogue": "scaled"},
        "training": {"batch_size": 16},
        "orchestration": {"rounds": 4, "clients_per_round": 6},
        "output": {"plots": False, "progress": False},
    }
    for key, value in sections.items():
        raw[key] = {**raw.get(key, {}), **value}
    return parse_config(raw)


def _event_lines(run_dir: Path) -> list[str]:
    return (run_dir / "events.jsonl").read_text().splitlines()


def _metrics_without_wall(run_dir: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    for row in rows:
        row.pop("wall_time_s")
    return rows


@pytest.mark.slow
def test_same_seed_same_trace_across_executors(tmp_path: Path) -> None:
    local = run(small(), tmp_path / "local")
    pooled = run(small(simulation={"executor": "process", "workers": 2}), tmp_path / "pool")
    again = run(small(), tmp_path / "again")

    assert _event_lines(tmp_path / "local") == _event_lines(tmp_path / "pool") == _event_lines(tmp_path / "again")
    assert _metrics_without_wall(tmp_path / "local") == _metrics_without_wall(tmp_path / "pool")
    assert _metrics_without_wall(tmp_path / "local") == _metrics_without_wall(tmp_path / "again")
    assert local.summary["final_accuracy"] == pooled.summary["final_accuracy"]


def test_different_seed_changes_the_trace(tmp_path: Path) -> None:
    run(small(), tmp_path / "a")
    run(small().model_copy(update={"seed": 4}), tmp_path / "b")
    assert _event_lines(tmp_path / "a") != _event_lines(tmp_path / "b")


def test_fixed_batch_32_runs_older_phones_out_of_memory(tmp_path: Path) -> None:
    fashion = write_fashion_like(tmp_path / "fashion")
    config = small(data={"dataset": "fashion_mnist", "path": str(fashion)}, training={"batch_size": 32},
                   orchestration={"rounds": 3, "clients_per_round": 12})
    result = run(config)
    oom = [r.failures_by_tier.get("older_phone", 0) for r in result.reports]
    assert result.summary["failures_by_cause"].get("out_of_memory", 0) > 0
    assert sum(oom) > 0
    assert result.summary["participants_by_tier"].get("older_phone", 0) == 0


def test_run_directory_holds_config_logs_summary_and_plots(tmp_path: Path) -> None:
    config = small(output={"plots": True}, orchestration={"rounds": 2})
    result = run(config, tmp_path / "run")
    names = {p.name for p in (tmp_path / "run").iterdir()}
    assert {"config.yaml", "metrics.jsonl", "events.jsonl", "summary.json", "accuracy.png",
            "participation.png", "failures.png"} <= names
    assert load_config(tmp_path / "run" / "config.yaml") == config
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["rounds"] == 2 and summary == json.loads(json.dumps(result.summary))
    row = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    for key in ("round", "virtual_time_s", "wall_time_s", "accuracy", "loss", "participants_by_tier",
                "failures_by_cause", "bytes_up", "bytes_down", "energy_j"):
        assert key in row


def test_examples_are_valid_and_photo_app_is_the_default() -> None:
    photo = load_config(ROOT / "examples" / "photo_app.yaml")
    assert photo == default_scenario()
    assert photo.batching.mode == "dynamic"
    for path in (ROOT / "examples").glob("*.yaml"):
        load_config(path)


@pytest.mark.slow
def test_synthetic_example_learns(tmp_path: Path) -> None:
    config = load_config(ROOT / "examples" / "synthetic.yaml")
    config = config.model_copy(update={"orchestration": config.orchestration.model_copy(update={"rounds": 8}),
                                       "output": config.output.model_copy(update={"plots": False})})
    result = run(config)
    accs = [r.accuracy for r in result.reports if r.accuracy is not None]
    assert accs[-1] > accs[0]
