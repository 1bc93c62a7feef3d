"""``compare`` with auto and fedavg-tuned, and ``run`` choosing auto for a config that names no strategy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fedfit.cli import main

TINY = {
    "name": "tiny", "seed": 2,
    "data": {"dataset": "digits", "partition": {"kind": "iid"}, "max_train_samples": 400, "max_test_samples": 100},
    "model": {"name": "logreg"},
    "fleet": {"tiers": {"midrange_phone": 3, "smartwatch": 2}},
    "training": {"lr": 0.1},
    "orchestration": {"rounds": 2, "clients_per_round": 3},
    "evaluation": {"target_accuracy": 0.3},
    "output": {"plots": False, "progress": False, "checkpoint_every": 0},
}


def _write(tmp_path: Path, raw: dict) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.slow
def test_compare_runs_the_grid_and_reports_the_chosen_point(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["compare", str(_write(tmp_path, TINY)), "--strategy", "auto", "--strategy", "fedavg-tuned",
                 "--json", "--out", str(tmp_path / "cmp")])
    assert code == 0
    table = json.loads(capsys.readouterr().out)
    tuned = table["fedavg-tuned"]
    assert len(tuned["grid"]) >= 6 and {g["batch"] for g in tuned["grid"]} == {8, 16, 32}
    assert tuned["chosen"] in tuned["grid"]
    reached = [g for g in tuned["grid"] if g["time_to_target_s"] is not None]
    if reached:  # the chosen point is the soonest to the target (the rule, applied by hand)
        assert tuned["chosen"]["time_to_target_s"] == min(g["time_to_target_s"] for g in reached)
    assert any(line.startswith("batch: dynamic") for line in table["auto"]["auto"])
    run_config = yaml.safe_load((tmp_path / "cmp" / "fedavg-tuned" / "config.yaml").read_text())
    assert run_config["training"]["batch_size"] == tuned["chosen"]["batch"]


@pytest.mark.slow
def test_run_turns_auto_on_only_when_the_config_names_no_strategy(tmp_path: Path) -> None:
    path = _write(tmp_path, TINY)
    assert main(["run", str(path), "--out", str(tmp_path / "a")]) == 0
    assert "auto" in json.loads((tmp_path / "a" / "summary.json").read_text())
    assert main(["run", str(path), "--out", str(tmp_path / "b"), "--set", "training.batch_size=8"]) == 0
    assert "auto" not in json.loads((tmp_path / "b" / "summary.json").read_text())
