"""``fedfit evaluate`` on a model with no hidden dimension (logistic regression) reports width 1
instead of failing on the narrower widths it cannot take."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fedfit.cli import main

TINY = {"name": "lr", "seed": 2, "data": {"dataset": "synthetic", "partition": {"kind": "natural"},
                                          "max_train_samples": 300, "max_test_samples": 60},
        "model": {"name": "logreg"}, "training": {"batch_size": 8},
        "fleet": {"catalogue": "scaled", "tiers": {"flagship_phone": 3}},
        "orchestration": {"rounds": 1, "clients_per_round": 2},
        "output": {"plots": False, "progress": False}}


def test_evaluate_reports_width_one_for_logistic_regression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "lr.yaml"
    config.write_text(yaml.safe_dump(TINY))
    assert main(["run", str(config), "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "run"), "--json"]) == 0  # was exit 2: "plan width 0.5: ... no hidden dimension"
    rows = json.loads(capsys.readouterr().out)
    assert [r["width"] for r in rows] == [1.0]
    assert rows[0]["num_params"] == 60 * 10 + 10  # Synthetic(α, β): 60 features, 10 classes, with bias
