"""An async ``auto`` run whose global loss stalls goes on in sync rounds, within its update budget,
and a resumed run switches where the unbroken one did."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fedfit.config import parse_config
from fedfit.policy.auto_switch import stalled
from fedfit.runner import resume, run
from tests.helpers import Killed, kill_after

# 7 devices, k = 3: auto runs FedBuff with buffer 2 (see tests/test_auto_resume.py), so 6 rounds
# are ⌈6 · 3 / 2⌉ = 9 versions; the stall window is max(5, ⌈7 / 2⌉) = 5 evaluated versions
RAW = {
    "seed": 3, "data": {"dataset": "digits", "max_train_samples": 400, "max_test_samples": 100},
    "model": {"name": "logreg"}, "fleet": {"tiers": {"midrange_phone": 3, "older_phone": 2, "smartwatch": 2}},
    "orchestration": {"rounds": 6, "clients_per_round": 3}, "auto": {"enabled": True},
    "output": {"plots": False, "progress": False, "checkpoint_every": 1},
}
VERSIONS, K, B, WINDOW = 9, 3, 2, 5


def _metrics(path: Path) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in (path / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k != "wall_time_s"} for row in rows]


@pytest.mark.slow
def test_a_stalled_async_run_switches_to_sync_rounds_within_its_budget(tmp_path: Path) -> None:
    result = run(parse_config(RAW), tmp_path / "whole")
    assert result.summary["auto"][6].startswith("mode: async")
    losses = [r.loss for r in result.reports]
    # the first version after which the last 5 losses show no significant fall, recomputed here
    at = next(v for v in range(1, VERSIONS) if stalled(losses[:v], WINDOW))
    assert result.summary["auto_switch"][0].startswith(f"version {at}: global loss stalled")
    # the updates of the 9 − at versions left, in sync rounds of 3
    assert len(result.reports) == at + math.ceil((VERSIONS - at) * B / K)
    folded = [sum(r.participants_by_tier.values()) for r in result.reports]
    assert max(folded[:at]) <= B < max(folded[at:]) <= K  # FedBuff folds b a version, sync up to k
    assert result.summary["auto_revisions"]  # the sync rounds revise their deadline from measured times

    with pytest.raises(Killed):  # once before the switch, then once after it
        run(parse_config(RAW), tmp_path / "cut", on_round=kill_after(at - 1))
    with pytest.raises(Killed):
        resume(tmp_path / "cut", on_round=kill_after(at))  # the first sync round
    resumed = resume(tmp_path / "cut")
    assert _metrics(tmp_path / "cut") == _metrics(tmp_path / "whole")
    assert resumed.summary["auto_switch"] == result.summary["auto_switch"]
    assert all(a.equal(b) for a, b in zip(result.params.values(), resumed.params.values(), strict=True))


@pytest.mark.slow
def test_switch_on_stall_false_keeps_fedbuff_for_the_whole_budget() -> None:
    config = parse_config(RAW | {"auto": {"enabled": True, "switch_on_stall": False}})
    result = run(config)
    assert len(result.reports) == VERSIONS and "auto_switch" not in result.summary
