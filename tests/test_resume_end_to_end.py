"""A run killed mid-way and resumed in a new process equals the unbroken run, event for event.

The reference is the same config run without interruption. The resumed run starts from the
last checkpoint (written before the kill, so the logs hold a round the checkpoint has not seen
and must be cut back), rebuilds everything else from the config in a fresh interpreter, and must
reproduce the metrics (wall time aside), the event log and the final model bit for bit.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from safetensors import safe_open

from fedfit.config import ExperimentConfig, parse_config
from fedfit.runner import run
from fedfit.simulation import checkpoint, columns
from fedfit.simulation.checkpoint import config_digest
from tests.helpers import Killed, kill_after

pytestmark = pytest.mark.slow

ASYNC = {"orchestration": {"mode": "async", "rounds": 10}, "asynchronous": {"buffer_size": 2},
         "batching": {"mode": "dynamic"}, "fleet": {"tiers": {"flagship_phone": 2, "older_phone": 3, "smartwatch": 3}},
         "width": {"mode": "capability", "deadline_s": 1.0, "indices": "importance"},
         "aggregation": {"participation": {"kind": "interval", "cutoff": 4}}}
SYNC_STALE = {"orchestration": {"rounds": 8, "clients_per_round": 3, "deadline_s": 0.3, "over_selection": 0.5,
                                "late_updates": "stale"},
              "selection": {"kind": "oort"}, "aggregation": {"participation": {"kind": "interval"}},
              "fleet": {"tiers": {"flagship_phone": 8, "older_phone": 5, "smartwatch": 3}},
              "width": {"mode": "capability", "deadline_s": 1.0, "elastic": True, "elastic_quantile": 0.2}}

#: Past :data:`fedfit.simulation.columns.MIN_ROWS` devices: the registry goes as columns.
MANY = {**SYNC_STALE, "model": {"name": "logreg"},
        "fleet": {"tiers": {"flagship_phone": 40, "older_phone": 30, "smartwatch": 20}}}


def _config(sections: dict[str, Any]) -> ExperimentConfig:
    raw: dict[str, Any] = {
        "seed": 2, "data": {"dataset": "digits", "max_train_samples": 600, "max_test_samples": 100},
        "model": {"name": "mlp"}, "fleet": {"tiers": {"flagship_phone": 3, "older_phone": 3, "smartwatch": 2}},
        "training": {"batch_size": 8},
        "output": {"plots": False, "progress": False, "checkpoint_every": 2},
    }
    for key, value in sections.items():
        raw[key] = {**raw.get(key, {}), **value}
    return parse_config(raw)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fedfit.cli", *args], capture_output=True, text=True, check=False)


def _metrics(run_dir: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "wall_time_s"} for r in rows]


def _assert_same_run(resumed: Path, unbroken: Path) -> None:
    assert _metrics(resumed) == _metrics(unbroken)
    assert (resumed / "events.jsonl").read_text() == (unbroken / "events.jsonl").read_text()
    assert (resumed / "model.safetensors").read_bytes() == (unbroken / "model.safetensors").read_bytes()
    summary = [{k: v for k, v in json.loads((d / "summary.json").read_text()).items() if "wall" not in k}
               for d in (resumed, unbroken)]
    assert summary[0] == summary[1]


@pytest.mark.parametrize("sections", [ASYNC, SYNC_STALE, MANY],
                         ids=["async-fedbuff-width", "sync-stale-oort", "sync-90-devices-as-columns"])
def test_run_killed_and_resumed_in_a_new_process_equals_the_unbroken_run(sections: dict[str, Any],
                                                                         tmp_path: Path) -> None:
    config = _config(sections)
    run(config, tmp_path / "unbroken")
    with pytest.raises(Killed):
        run(config, tmp_path / "resumed", kill_after(4))  # round 4 logged; last checkpoint after round 3
    saved = checkpoint.load(tmp_path / "resumed")
    assert saved.rounds_done == 4 and len(_metrics(tmp_path / "resumed")) == 5
    assert saved.fleet.pending, "the checkpoint should hold tasks in flight"
    state = safe_open(str(tmp_path / "resumed" / checkpoint.FILENAME), framework="pt").get_tensor(checkpoint.STATE_KEY)
    assert ('"$c"' in bytes(state.numpy()).decode()) == (len(saved.registry) >= columns.MIN_ROWS)

    done = _cli("resume", str(tmp_path / "resumed"))

    assert done.returncode == 0, done.stderr
    _assert_same_run(tmp_path / "resumed", tmp_path / "unbroken")


def test_resume_with_more_rounds_extends_a_finished_run(tmp_path: Path) -> None:
    run(_config(ASYNC), tmp_path / "short")
    run(_config({**ASYNC, "orchestration": {**ASYNC["orchestration"], "rounds": 12}}), tmp_path / "long")

    again = _cli("resume", str(tmp_path / "short"))
    done = _cli("resume", str(tmp_path / "short"), "--rounds", "12")

    assert again.returncode == 2 and "already has 10 rounds" in again.stderr and len(again.stderr.splitlines()) == 1
    assert done.returncode == 0, done.stderr
    _assert_same_run(tmp_path / "short", tmp_path / "long")


def test_resume_refuses_a_changed_config(tmp_path: Path) -> None:
    run(_config(SYNC_STALE), tmp_path / "r")
    path = tmp_path / "r" / "config.yaml"
    path.write_text(path.read_text().replace("seed: 2", "seed: 3"))

    done = _cli("resume", str(tmp_path / "r"), "--rounds", "6")

    assert done.returncode == 2 and "seed differs from the config the checkpoint was written with" in done.stderr


def test_elastic_width_resumes_from_the_pools_in_the_checkpoint(tmp_path: Path) -> None:
    config = _config({"orchestration": {"rounds": 2, "clients_per_round": 3},
                      "width": {"mode": "capability", "elastic": True, "elastic_quantile": 0.5}})
    run(config, tmp_path)
    saved = checkpoint.load(tmp_path)
    # Pretend round 1's cohort could only afford 1/16 width: elastic width must cap round 2 there.
    checkpoint.save(tmp_path, dataclasses.replace(saved, width_pools={1: [0.0625] * 5}))

    assert _cli("resume", str(tmp_path), "--rounds", "3").returncode == 0

    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert {e["width"] for e in events if e["round"] == 2} == {0.0625}
    assert {e["width"] for e in events if e["round"] < 2} != {0.0625}


def test_a_config_written_before_a_key_existed_still_resumes(tmp_path: Path) -> None:
    run(_config(SYNC_STALE), tmp_path)
    path = tmp_path / "config.yaml"
    raw = yaml.safe_load(path.read_text())
    del raw["aggregation"]["fairness_q"]  # as an older fedfit, without this key, wrote it
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    saved = checkpoint.load(tmp_path)
    checkpoint.save(tmp_path, dataclasses.replace(saved, config_digest=config_digest(raw)))

    done = _cli("resume", str(tmp_path), "--rounds", "9")

    assert done.returncode == 0, done.stderr
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 9
