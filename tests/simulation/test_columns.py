"""A registry of many devices goes into a checkpoint as columns and comes back equal; damaged
columns are one clear error."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from fedfit.devices.catalogue import tier
from fedfit.devices.registry import DeviceHistory, Registry, RegistryEntry, UpdateRecord
from fedfit.errors import CheckpointError
from fedfit.orchestration.sync import SyncState
from fedfit.simulation import checkpoint, columns
from fedfit.simulation.checkpoint import Checkpoint
from fedfit.simulation.codec import Codec
from fedfit.simulation.fleet import FleetState
from fedfit.types import DeviceProfile, DeviceState, Link, Thermal, UtilisationCurve
from tests.helpers import state

CODEC = Codec([RegistryEntry, DeviceHistory, UpdateRecord, DeviceProfile, UtilisationCurve, DeviceState,
               Thermal, Link])
TIERS = ("flagship_phone", "smartwatch", "sensor_mcu")


def registry(devices: int, trained: int, seed: int = 0) -> Registry:
    """``devices`` enrolled from three tiers, all but every seventh reported (odd values: None
    battery, ints beyond 2**53, a float field holding an int), the first ``trained`` with history."""
    rng = random.Random(seed)
    reg = Registry()
    profiles = [tier(name) for name in TIERS]
    for d in range(devices):
        reg.add(d, profiles[d % 3])
        if d % 7:
            reg.report_state(d, state(free_memory_bytes=rng.randrange(2**60), battery_fraction=None if d % 5 == 0
                                      else rng.random(), charging=None if d % 3 == 2 else d % 2 == 0,
                                      thermal=rng.choice(list(Thermal)), bandwidth_bps=rng.choice([1e7, 5]),
                                      temperature_c=rng.uniform(20, 45)), at_s=float(d))
    for d in range(trained):
        reg.record_result(d, ok=d % 4 != 0, cause="battery" if d % 4 == 0 else None, duration_s=rng.random(), round=d)
        if d % 2:
            reg.record_batch(d, 16, 2)
            reg.record_fold(d, d)
    return reg


def _round_trip(value: object) -> tuple[object, Any, dict[str, torch.Tensor]]:
    tensors: dict[str, torch.Tensor] = {}
    data = json.loads(json.dumps(CODEC.encode(value, tensors)))  # through real JSON text
    return CODEC.decode(data, tensors), data, tensors


def test_a_registry_comes_back_equal_field_by_field_and_type_by_type() -> None:
    entries = registry(500, trained=120).entries()
    back, data, tensors = _round_trip(entries)
    assert "$c" in data and len(json.dumps(data)) < 10_000  # columns and small tables, not 500 objects (650 KB)
    assert back == entries and isinstance(back, tuple)
    assert [type(e.state.bandwidth_bps) for e in back if e.state] == [type(e.state.bandwidth_bps) for e in entries if e.state]
    assert back[0].profile == tier("flagship_phone") and back[7].state is None and back[1].state_at_s == 1.0


def test_short_sequences_and_lists_keep_their_plain_forms() -> None:
    entries = registry(columns.MIN_ROWS - 1, trained=3).entries()
    back, data, _ = _round_trip(entries)
    assert back == entries and "$c" not in json.dumps(data)
    rows = list(registry(columns.MIN_ROWS, trained=0).entries())
    back, data, _ = _round_trip(rows)
    assert back == rows and isinstance(back, list) and data["$c"][0] == "l"


def _damage(edit: Any) -> str:
    _, data, tensors = _round_trip(registry(100, trained=10).entries())
    edit(data["$c"][3], tensors)
    with pytest.raises(CheckpointError) as err:
        CODEC.decode(data, tensors)
    assert "\n" not in str(err.value)
    return str(err.value)


def test_damaged_columns_are_one_line_errors() -> None:
    def retype(fields: Any, tensors: dict[str, torch.Tensor]) -> None:
        tensors[fields["device_id"]["i"]] = tensors[fields["device_id"]["i"]].double()

    def shorten(fields: Any, tensors: dict[str, torch.Tensor]) -> None:
        tensors[fields["device_id"]["i"]] = tensors[fields["device_id"]["i"]][:-1]

    def out_of_table(fields: Any, tensors: dict[str, torch.Tensor]) -> None:
        link = fields["state"]["c"][2]["link"]
        tensors[link["x"]] = torch.full_like(tensors[link["x"]], 9)

    assert "expected torch.int64 (100,)" in _damage(retype)
    assert "expected torch.int64 (100,)" in _damage(shorten)
    assert "outside its table of 1" in _damage(out_of_table)
    assert "DeviceState.link: expected Link" in _damage(lambda f, t: f["state"]["c"][2]["link"]["u"].__setitem__(0, 5))
    assert "RegistryEntry.profile: expected DeviceProfile" in _damage(lambda f, t: f["profile"]["u"].__setitem__(0, 5))
    assert "['evil'] missing or unknown" in _damage(lambda f, t: f.update({"evil": f["device_id"]}))
    assert "['state'] missing or unknown" in _damage(lambda f, t: f.pop("state"))
    assert "'Popen'" in _damage(lambda f, t: f["state"]["c"].__setitem__(0, "Popen"))
    assert "missing from the tensor file" in _damage(lambda f, t: t.pop(f["state_at_s"]["f"]))
    assert "nested deeper" in _damage(lambda f, t: f.update({"history": {"u": json.loads("[" * 70 + "]" * 70),
                                                                          "x": f["device_id"]["i"]}}))


@pytest.mark.slow
def test_a_checkpoint_of_a_100k_device_fleet_saves_and_resumes(tmp_path: Path) -> None:
    entries = registry(100_000, trained=1_000).entries()
    params = {"linear.weight": torch.randn(10, 64), "linear.bias": torch.zeros(10)}
    fleet = FleetState(tuple(float(d % 11) for d in range(100_000)), ())
    saved = Checkpoint("digest", SyncState(params, round=1, now_s=7.0), fleet, None, {}, entries, (), (0, 0))
    t0 = time.perf_counter()
    path = checkpoint.save(tmp_path, saved)
    print(f"100k devices: {path.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - t0:.2f} s")
    assert path.stat().st_size < 150 * 100_000  # columns: tens of bytes per device, not 1.3 KB of JSON
    loaded = checkpoint.load(tmp_path)
    assert loaded.registry == entries and loaded.fleet == fleet
    assert isinstance(loaded.server, SyncState) and loaded.server.params["linear.weight"].equal(params["linear.weight"])
