"""A checkpointed fleet, restored in a fresh fleet, delivers what the unbroken fleet delivers."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fedfit.config import parse_config
from fedfit.errors import CheckpointError
from fedfit.orchestration.sync import SyncState
from fedfit.simulation import checkpoint
from fedfit.simulation.checkpoint import Checkpoint, config_digest, config_mismatch
from fedfit.types import TaskResult, TrainPlan, Update
from tests.helpers import profile, state
from tests.simulation.test_fleet import _setup

SPEEDS = (1e9, 2e8, 5e7)  # three devices finishing at different virtual times


def _dispatched():
    """A fleet with three tasks in flight (one finished), and its initial parameters."""
    _, _, fleet, _, initial = _setup(3, [state()] * 3, profiles=[profile(flops_per_s=f) for f in SPEEDS])
    for device in range(3):
        fleet.dispatch(TrainPlan(device, 0, 8, lr=0.1), initial, now_s=5.0 * device)
    return fleet, initial


def _drain(fleet) -> list[TaskResult]:  # type: ignore[no-untyped-def]
    results = []
    while (r := fleet.next_result()) is not None:
        results.append(r)
    return results


def _saved(tmp_path: Path, fleet, initial) -> Checkpoint:  # type: ignore[no-untyped-def]
    cp = Checkpoint("digest", SyncState(initial, round=1, now_s=7.0), fleet.state(), None, {}, (), (), (0, 0))
    checkpoint.save(tmp_path, cp)
    return checkpoint.load(tmp_path)


def test_restored_fleet_returns_the_same_results_and_energy(tmp_path: Path) -> None:
    fleet, initial = _dispatched()
    first = fleet.next_result()
    loaded = _saved(tmp_path, fleet, initial)
    _, _, other, _, _ = _setup(3, [state()] * 3, profiles=[profile(flops_per_s=f) for f in SPEEDS])
    other.restore(loaded.fleet)

    expected, got = _drain(fleet), _drain(other)
    assert first is not None and len(expected) == 2 and [r.finish_s for r in got] == [r.finish_s for r in expected]
    for a, b in zip(got, expected, strict=True):
        assert isinstance(a.outcome, Update) and isinstance(b.outcome, Update)
        assert all(a.outcome.params[k].equal(b.outcome.params[k]) for k in b.outcome.params)
        assert a.plan == b.plan and a.cost == b.cost
    assert [other.energy_used_j(d) for d in range(3)] == [fleet.energy_used_j(d) for d in range(3)]
    assert not any(other.busy(d) for d in range(3))
    assert isinstance(loaded.server, SyncState) and loaded.server.params["linear.weight"].equal(initial["linear.weight"])


def test_checkpoint_file_is_replaced_whole(tmp_path: Path) -> None:
    fleet, initial = _dispatched()
    _saved(tmp_path, fleet, initial)
    fleet.next_result()
    again = _saved(tmp_path, fleet, initial)
    assert len(again.fleet.pending) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [checkpoint.FILENAME]  # no temporary left behind


def test_missing_or_damaged_checkpoint_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no checkpoint"):
        checkpoint.load(tmp_path)
    (tmp_path / checkpoint.FILENAME).write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    with pytest.raises(CheckpointError, match="unreadable checkpoint"):
        checkpoint.load(tmp_path)


def test_config_digest_ignores_round_count_executor_and_output_only() -> None:
    raw = {"data": {"dataset": "digits"}, "orchestration": {"rounds": 3}}
    base = config_digest(parse_config(raw).model_dump(mode="json"))
    longer = parse_config({**raw, "orchestration": {"rounds": 9}, "output": {"dir": "elsewhere"}, "name": "x",
                           "simulation": {"executor": "process", "workers": 4}})
    other_seed = parse_config({**raw, "seed": 1})
    assert config_digest(longer.model_dump(mode="json")) == base
    assert config_digest(other_seed.model_dump(mode="json")) != base


def test_a_mismatch_names_the_keys_that_differ_and_an_older_digest_still_compares() -> None:
    import hashlib
    import json

    raw = {"data": {"dataset": "digits"}, "orchestration": {"rounds": 3}}
    base = parse_config(raw).model_dump(mode="json")
    other = parse_config({**raw, "seed": 1, "fleet": {"tiers": {"midrange_phone": 3}},
                          "orchestration": {"rounds": 9}}).model_dump(mode="json")
    assert config_mismatch(config_digest(base), config_digest(base)) is None
    message = config_mismatch(config_digest(base), config_digest(other))
    assert message is not None and message.startswith("fleet, seed differ from the config the checkpoint")
    # a digest written before the keys were named: the whole's sha256 of the relevant keys, 16 hex
    relevant = {k: v for k, v in base.items() if k not in ("output", "simulation", "name")}
    relevant["orchestration"] = {k: v for k, v in relevant["orchestration"].items() if k != "rounds"}
    older = hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]
    assert config_mismatch(older, config_digest(base)) is None
    assert config_mismatch(older, config_digest(other)) == "changed since the checkpoint was written"


def test_a_format_1_checkpoint_with_its_state_in_the_header_still_loads(tmp_path: Path) -> None:
    from safetensors import safe_open
    from safetensors.torch import save_file

    fleet, initial = _dispatched()
    expected = _saved(tmp_path, fleet, initial)  # three devices: no columns, as format 1 had none
    path = tmp_path / checkpoint.FILENAME
    with safe_open(str(path), framework="pt") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    state = bytes(tensors.pop(checkpoint.STATE_KEY).numpy()).decode()
    save_file(tensors, str(path), metadata={"format": "1", "fedfit_checkpoint": state})

    loaded = checkpoint.load(tmp_path)

    assert loaded.fleet.consumed_j == expected.fleet.consumed_j and len(loaded.fleet.pending) == 3
    save_file(tensors, str(path), metadata={"format": "2"})  # format 2 without its state tensor
    with pytest.raises(CheckpointError, match="not a fedfit checkpoint of format 2"):
        checkpoint.load(tmp_path)
