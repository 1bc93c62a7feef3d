"""An ``auto`` run resumed from its checkpoint equals the unbroken run (its decision is rebuilt
from the same enrolment reports)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fedfit import autorun
from fedfit.cli import main
from fedfit.config import ExperimentConfig, parse_config
from fedfit.runner import resume, run
from tests.helpers import Killed, kill_after

RAW = {
    "seed": 3, "data": {"dataset": "digits", "max_train_samples": 400, "max_test_samples": 100},
    "model": {"name": "logreg"}, "fleet": {"tiers": {"midrange_phone": 3, "older_phone": 2, "smartwatch": 2}},
    "orchestration": {"rounds": 4, "clients_per_round": 3}, "auto": {"enabled": True},
    "output": {"plots": False, "progress": False, "checkpoint_every": 2},
}


def _metrics(path: Path) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in (path / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k != "wall_time_s"} for row in rows]


@pytest.mark.slow
def test_auto_run_resumes_to_the_unbroken_run(tmp_path: Path) -> None:
    config = parse_config(RAW)
    whole = run(config, tmp_path / "whole")
    with pytest.raises(Killed):
        run(config, tmp_path / "cut", on_round=kill_after(2))
    resumed = resume(tmp_path / "cut")
    assert _metrics(tmp_path / "cut") == _metrics(tmp_path / "whole")
    assert resumed.summary["auto"] == whole.summary["auto"]
    assert all(a.equal(b) for a, b in zip(whole.params.values(), resumed.params.values(), strict=True))


@pytest.mark.slow
def test_an_async_auto_run_runs_its_update_budget_and_resumes_past_the_configs_rounds(tmp_path: Path) -> None:
    # auto runs FedBuff here with buffer 2 for k = 3: 4 rounds of 3 updates are ⌈4 · 3 / 2⌉ = 6 versions
    config = parse_config(RAW | {"output": {**RAW["output"], "checkpoint_every": 1}})  # type: ignore[dict-item]
    whole = run(config, tmp_path / "whole")
    assert whole.summary["auto"][6].startswith("mode: async") and len(whole.reports) == 6

    with pytest.raises(Killed):  # after the 5th version (round 4): its checkpoint holds more than the config's 4
        run(config, tmp_path / "cut", on_round=kill_after(4))
    resumed = resume(tmp_path / "cut")
    assert len(resumed.reports) == 6 and _metrics(tmp_path / "cut") == _metrics(tmp_path / "whole")


def test_on_start_is_given_the_resolved_version_count_before_any_round(tmp_path: Path) -> None:
    # the CLI's progress bar total: auto picks FedBuff with buffer 2 for k = 3 here (see above),
    # so the config's 4 rounds resolve to ⌈4 · 3 / 2⌉ = 6 versions
    seen: list[int] = []

    def on_start(resolved: ExperimentConfig) -> None:
        seen.append(resolved.orchestration.rounds)
        raise Killed

    with pytest.raises(Killed):
        run(parse_config(RAW), None, on_round=kill_after(2), on_start=on_start)
    assert seen == [6]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["async", "sync"])
def test_fedfit_resume_resolves_auto_once_and_ends_as_the_unbroken_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    # async_advantage 1000 keeps auto synchronous (async must be 1000x faster to be chosen)
    raw = RAW if mode == "async" else RAW | {"auto": {"enabled": True, "async_advantage": 1000.0}}
    config = parse_config(raw)
    whole = run(config, tmp_path / "whole")
    assert any(line.startswith(f"mode: {mode}") for line in whole.summary["auto"])
    with pytest.raises(Killed):
        run(config, tmp_path / "cut", on_round=kill_after(2))

    modes: list[str | None] = []  # each decision auto resolves: the run's (None), the stall switch's ("sync")
    real = autorun.resolve_auto

    def spy(*args: Any, **kwargs: Any) -> Any:
        modes.append(kwargs.get("mode"))
        return real(*args, **kwargs)

    monkeypatch.setattr(autorun, "resolve_auto", spy)
    assert main(["resume", str(tmp_path / "cut")]) == 0  # its message, the check under the lock, the build
    # an async run also decides once for the sync rounds it switches to when the loss stalls
    assert modes == ([None, "sync"] if mode == "async" else [None])
    assert _metrics(tmp_path / "cut") == _metrics(tmp_path / "whole")
    resumed = json.loads((tmp_path / "cut" / "summary.json").read_text())
    assert resumed["auto"] == whole.summary["auto"] and resumed["final_accuracy"] == whole.summary["final_accuracy"]
