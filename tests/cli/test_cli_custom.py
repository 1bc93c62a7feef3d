"""The CLI runs a YAML-named user module and loader; a bad one exits 2 with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fedfit.cli import main

CUSTOM = {
    "fleet": {"tiers": {"flagship_phone": 2, "older_phone": 2}},
    "data": {"loader": "tests.custom_modules:blobs", "partition": {"kind": "iid"}},
    "model": {"factory": "tests.custom_modules:tiny_mlp", "kwargs": {"hidden": 6}},
    "orchestration": {"rounds": 1, "clients_per_round": 2},
    "output": {"progress": False, "plots": False},
}


def _write(tmp_path: Path, raw: dict[str, object]) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.slow
def test_run_trains_the_named_module_and_records_its_factory(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(_write(tmp_path, CUSTOM)), "--out", str(tmp_path / "run")]) == 0
    record = json.loads((tmp_path / "run" / "model.json").read_text())
    assert record["factory"] == "tests.custom_modules:tiny_mlp" and record["kwargs"] == {"hidden": 6}


def test_a_factory_that_does_not_import_exits_2_with_one_line(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    raw = {**CUSTOM, "model": {"factory": "tests.custom_modules:nothing_here"}}
    assert main(["run", str(_write(tmp_path, raw)), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert "model.factory: cannot import 'tests.custom_modules:nothing_here'" in err and "\n" not in err
