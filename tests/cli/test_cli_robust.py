"""The CLI's crash and misuse paths: Ctrl-C at any moment, --force, files in the way."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fedfit.cli import main
from tests.faults.conftest import SMALL


def _write(tmp_path: Path) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(SMALL))
    return path


@pytest.mark.parametrize("where", ["fedfit.cli.load_config", "fedfit.runner.built"])
def test_ctrl_c_during_start_up_is_one_line_and_130(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    def interrupt(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(where, interrupt)
    code = main(["run", str(_write(tmp_path)), "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 130 and err.count("\n") == 1 and err.startswith("fedfit: interrupted")
    assert not (tmp_path / "run").exists()  # nothing was written, so nothing is left


def test_force_replaces_a_run_and_without_it_the_run_is_kept(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    config, out = _write(tmp_path), tmp_path / "run"
    assert main(["run", str(config), "--out", str(out)]) == 0
    summary = (out / "summary.json").read_bytes()
    assert main(["run", str(config), "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err and (out / "summary.json").read_bytes() == summary
    assert main(["run", str(config), "--out", str(out), "--force"]) == 0


def test_compare_refuses_to_overwrite_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, out = _write(tmp_path), tmp_path / "cmp"
    args = ["compare", str(config), "--strategy", "fedavg", "--json", "--out", str(out)]
    assert main(args) == 0
    capsys.readouterr()
    assert main(args) == 2
    assert "already holds a finished run" in capsys.readouterr().err
    assert main([*args, "--force"]) == 0
