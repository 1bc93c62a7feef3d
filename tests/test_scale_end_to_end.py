"""A 100,000-device fleet (lazy traces, sampled candidates, a shared data pool) checkpoints and
resumes to the same run as the unbroken one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fedfit.config import parse_config
from fedfit.runner import resume, run
from fedfit.simulation import checkpoint
from tests.helpers import Killed, kill_after

pytestmark = pytest.mark.slow

DEVICES = 100_000


def _lines(run_dir: Path, name: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (run_dir / name).read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "wall_time_s"} for r in rows]


def test_a_100k_device_fleet_checkpoints_and_resumes_to_the_unbroken_run(tmp_path: Path) -> None:
    config = parse_config({
        "seed": 4, "model": {"name": "logreg"},
        "data": {"dataset": "synthetic", "partition": {"kind": "natural"}, "pool": 100,
                 "max_train_samples": 5000, "max_test_samples": 200},
        "fleet": {"tiers": {"flagship_phone": DEVICES // 2, "smartwatch": DEVICES // 2}},
        "training": {"batch_size": 8, "max_steps": 2},
        "orchestration": {"rounds": 3, "clients_per_round": 5},
        "output": {"plots": False, "progress": False, "checkpoint_every": 1}})
    run(config, tmp_path / "unbroken")
    with pytest.raises(Killed):
        run(config, tmp_path / "resumed", kill_after(1))

    saved = checkpoint.load(tmp_path / "resumed")
    assert len(saved.registry) == DEVICES and saved.rounds_done >= 1
    resume(tmp_path / "resumed")

    for name in ("metrics.jsonl", "events.jsonl"):
        assert _lines(tmp_path / "resumed", name) == _lines(tmp_path / "unbroken", name)
    model = (tmp_path / "resumed" / "model.safetensors").read_bytes()
    assert model == (tmp_path / "unbroken" / "model.safetensors").read_bytes()
