"""DYNAMITE's planner state beside a checkpoint: saved, restored exactly, pruned, refused when wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fedfit.errors import CheckpointError
from fedfit.policy.dynamite.snapshot import snapshot
from fedfit.simulation import planner_state
from tests.policy.dynamite.test_planner import local_gd_round, planner


def _trained() -> object:
    p = planner()
    w = local_gd_round(p, 0, torch.tensor([4.0, 4.0, 4.0]), steps=4)
    p.current()
    local_gd_round(p, 1, w, steps=3)
    return p


def test_a_fresh_planner_restored_from_the_file_equals_the_saved_one(tmp_path: Path) -> None:
    p = _trained()
    planner_state.save(tmp_path, p, 2, "abc")
    fresh = planner()
    planner_state.load(tmp_path, fresh, 2, "abc")
    a, b = snapshot(p), snapshot(fresh)  # type: ignore[arg-type]
    assert b.calibration == a.calibration and b.calibration is not None and b.calibration.last is not None
    assert (b.speed, b.spent_s, b.spent_j, b.observed, b.assignment, b.history) == \
           (a.speed, a.spent_s, a.spent_j, a.observed, a.assignment, a.history)
    assert b.versions.keys() == a.versions.keys() and all(torch.equal(b.versions[v], a.versions[v]) for v in a.versions)
    assert b.estimator.estimates(fresh.settings.prior) == a.estimator.estimates(fresh.settings.prior)
    assert b.estimator.last_g is not None and a.estimator.last_g is not None
    assert torch.equal(b.estimator.last_g, a.estimator.last_g)
    assert fresh.current() == p.current()  # type: ignore[attr-defined]


def test_older_files_are_pruned_and_a_missing_or_foreign_file_is_one_line(tmp_path: Path) -> None:
    p = _trained()
    planner_state.save(tmp_path, p, 2, "abc")
    planner_state.save(tmp_path, p, 4, "abc")
    planner_state.prune(tmp_path, 4)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["dynamite-4.safetensors"]
    with pytest.raises(CheckpointError, match="missing or unreadable") as missing:
        planner_state.load(tmp_path, planner(), 2, "abc")
    with pytest.raises(CheckpointError, match="another run") as foreign:
        planner_state.load(tmp_path, planner(), 4, "xyz")
    (tmp_path / "dynamite-6.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(CheckpointError, match="unreadable") as damaged:
        planner_state.load(tmp_path, planner(), 6, "abc")
    assert all(len(str(e.value).splitlines()) == 1 for e in (missing, foreign, damaged))


def test_other_planners_write_and_read_nothing(tmp_path: Path) -> None:
    planner_state.save(tmp_path, None, 2, "abc")
    planner_state.load(tmp_path, None, 2, "abc")
    assert list(tmp_path.iterdir()) == []
