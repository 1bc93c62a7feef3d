"""The tier catalogue in use is visible: the run header, summary.json and ``fedfit devices``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedfit.cli import main
from tests.cli.test_cli import SMALL, _write


def test_run_names_the_catalogue_in_its_header_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(_write(tmp_path, SMALL)), "--out", str(tmp_path / "run"),
                 "--set", "orchestration.rounds=1", "--set", "fleet.catalogue=scaled"])
    assert code == 0
    assert "cli: tier catalogue 'scaled'" in capsys.readouterr().out
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["tier_catalogue"] == "scaled"


@pytest.mark.parametrize(("catalogue", "budget"), [("realistic", "300 MB"), ("scaled", "9.03 MB")])
def test_devices_prints_the_chosen_catalogue(catalogue: str, budget: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices", "--json", "--catalogue", catalogue]) == 0
    assert json.loads(capsys.readouterr().out)["flagship_phone"]["training_memory"] == budget


def test_devices_defaults_to_the_realistic_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices"]) == 0
    assert "catalogue 'realistic'" in capsys.readouterr().out
