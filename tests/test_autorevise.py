"""A sync ``auto`` run revises its deadline from measured durations and says so in the summary."""

from __future__ import annotations

import pytest

from fedfit.config import parse_config
from fedfit.runner import run


@pytest.mark.slow
def test_sync_auto_run_logs_its_revisions() -> None:
    config = parse_config({
        "seed": 0, "data": {"dataset": "digits", "max_train_samples": 400, "max_test_samples": 100},
        "model": {"name": "logreg"}, "fleet": {"tiers": {"midrange_phone": 4, "older_phone": 4, "smartwatch": 2}},
        "orchestration": {"rounds": 4, "clients_per_round": 4},
        "auto": {"enabled": True, "async_advantage": 100.0, "revise_after": 2},  # sync whatever the rates
        "output": {"plots": False, "progress": False}})
    summary = run(config).summary
    assert any(line.startswith("mode: sync") for line in summary["auto"])
    revisions = summary["auto_revisions"]
    assert revisions and revisions[0].startswith("round 2: deadline ")  # nothing before round 2


@pytest.mark.slow
def test_revise_after_null_turns_revision_off() -> None:
    config = parse_config({
        "seed": 0, "data": {"dataset": "digits", "max_train_samples": 200, "max_test_samples": 50},
        "model": {"name": "logreg"}, "fleet": {"tiers": {"midrange_phone": 4}},
        "orchestration": {"rounds": 2, "clients_per_round": 2},
        "auto": {"enabled": True, "async_advantage": 100.0, "revise_after": None},
        "output": {"plots": False, "progress": False}})
    assert "auto_revisions" not in run(config).summary
