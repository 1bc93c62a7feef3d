"""``resumable`` compares an ``auto`` run's checkpoint with the rounds auto resolves (issue 11):
an async auto run of R rounds of k updates applies ⌈R·k / b⌉ versions, so a run directory
holding more versions than that for the asked rounds is refused like a plain run's."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fedfit.autorun import resolve_run
from fedfit.cli import main
from fedfit.config import ExperimentConfig, parse_config
from fedfit.errors import ConfigError
from fedfit.resumption import resumable
from fedfit.runner import run
from tests.helpers import Killed, kill_after

# As tests/test_auto_resume.py: auto picks FedBuff with buffer 2 for k = 3 on this fleet.
RAW = {
    "seed": 3, "data": {"dataset": "digits", "max_train_samples": 400, "max_test_samples": 100},
    "model": {"name": "logreg"}, "fleet": {"tiers": {"midrange_phone": 3, "older_phone": 2, "smartwatch": 2}},
    "orchestration": {"rounds": 4, "clients_per_round": 3}, "auto": {"enabled": True},
    "output": {"plots": False, "progress": False, "checkpoint_every": 1},
}


def _versions(rounds: int) -> int:
    return math.ceil(rounds * 3 / 2)  # k = 3 updates per round, FedBuff folds b = 2 per version


def _resolved_rounds(config: ExperimentConfig) -> int:
    resolved = resolve_run(config)
    assert resolved is not None and resolved.asked is config
    return resolved.config.orchestration.rounds


def test_resolved_rounds_are_the_async_budget_and_nothing_is_resolved_without_auto() -> None:
    assert _resolved_rounds(parse_config(RAW)) == _versions(4) == 6
    assert _resolved_rounds(parse_config(RAW | {"orchestration": {"rounds": 3, "clients_per_round": 3}})) == 5
    assert resolve_run(parse_config(RAW | {"auto": {"enabled": False}})) is None


@pytest.mark.slow
def test_an_auto_run_dir_with_more_versions_than_asked_is_refused_and_a_normal_resume_works(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut"
    with pytest.raises(Killed):  # after the 5th version: more than the config's 4 rounds, fewer than its 6 versions
        run(parse_config(RAW), cut, on_round=kill_after(4))

    with pytest.raises(ConfigError, match="already has 5 rounds"):
        resumable(cut, 2)  # 2 rounds are 3 versions
    assert main(["resume", str(cut), "--rounds", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "already has 5 rounds" in err and len(err.splitlines()) == 1

    checked = resumable(cut)  # 4 rounds are 6 versions: one left
    assert checked.saved.rounds_done == 5 and checked.total == 6
    assert checked.config.orchestration.rounds == 4  # the config as written, not resolved
    capsys.readouterr()
    assert main(["resume", str(cut)]) == 0  # the CLI counts the resolved versions too
    assert "after round 5 of 6" in " ".join(capsys.readouterr().out.split())  # a long tmp path wraps the line
    with pytest.raises(ConfigError, match="already has 6 rounds"):
        resumable(cut)  # finished with its 6 versions
