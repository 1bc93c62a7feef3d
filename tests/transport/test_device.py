"""The device loop and the server run in-process (the app over TestClient, no uvicorn): a whole
deployed run, a device declining by its own batch policy, and a real out-of-memory error reported."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from fedfit.config import parse_config
from fedfit.devices import tier
from fedfit.transport import device as device_module
from fedfit.transport.app import create_app
from fedfit.transport.client import DeviceClient
from fedfit.transport.commands import _device
from fedfit.transport.device import DeviceOptions
from fedfit.transport.server import ServerRun

SECRET = "s3cret"


def tiny(**over: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "name": "tiny", "seed": 0, "model": {"name": "logreg"}, "output": {"plots": False},
        "data": {"dataset": "digits", "partition": {"kind": "iid"}, "max_train_samples": 200,
                 "max_test_samples": 100},
        "fleet": {"tiers": {"flagship_phone": 2}}, "training": {"batch_size": 10, "lr": 0.1},
        "orchestration": {"rounds": 2, "clients_per_round": 2},
        "deploy": {"poll_wait_s": 0.2, "linger_s": 0.0}}
    for key, value in over.items():
        raw[key] = raw.get(key, {}) | value
    return raw


def deployed_run(tmp_path: Path, raw: dict[str, Any], options: list[DeviceOptions]) -> tuple[ServerRun, list[int]]:
    run = ServerRun(parse_config(raw), tmp_path, SECRET)
    loop = threading.Thread(target=run.run)
    codes: list[int] = []
    with TestClient(create_app(run.coord, poll_wait_s=0.2)) as http:
        loop.start()
        devices = [threading.Thread(target=lambda o=o: codes.append(_device(DeviceClient(http, SECRET), o)))
                   for o in options]
        for d in devices:
            d.start()
        loop.join(timeout=240)
        for d in devices:
            d.join(timeout=60)
    assert run.error is None and not loop.is_alive()
    return run, codes


def test_a_deployed_run_writes_the_run_directory(tmp_path: Path) -> None:
    run, codes = deployed_run(tmp_path, tiny(), [DeviceOptions(shard=(0, 2)), DeviceOptions(shard=(1, 2))])
    assert codes == [0, 0]
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["round"] for m in metrics] == [0, 1]
    assert all(m["participants_by_tier"] == {"flagship_phone": 2} for m in metrics)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["rounds"] == 2 and summary["final_accuracy"] is not None
    journal = run.store.journal()
    assert len(journal) == 4 and sorted(e.applied_version for e in journal) == [1, 1, 2, 2]  # type: ignore[type-var]
    assert (tmp_path / "models" / "v2.safetensors").is_file()
    # energy: never a fake 0 J; an estimate from the tier's power model over measured times, labelled
    flagship = tier("flagship_phone")
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    assert summary["energy_source"].startswith("estimate") and all("estimate" in m["energy_source"] for m in metrics)
    assert summary["energy_j"] > 0 and all(e["energy_j"] > 0 for e in events if e["ok"])
    power = flagship.compute_power_w + flagship.radio_power_w
    assert all(e["energy_j"] <= power * (e["finish_s"] - e["start_s"]) + 1e-9 for e in events)


def test_a_device_out_of_memory_reports_it_and_carries_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = device_module.train
    calls = {"n": 0}

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory")
        return real(*args, **kwargs)

    monkeypatch.setattr(device_module, "train", flaky)
    raw = tiny(fleet={"tiers": {"flagship_phone": 1}}, orchestration={"clients_per_round": 1})
    run, codes = deployed_run(tmp_path, raw, [DeviceOptions(shard=(0, 1))])
    assert codes == [0]
    failed = run.store.tasks("failed")
    assert len(failed) == 1 and failed[0].detail.startswith("out_of_memory: ") and "DefaultCPUAllocator" in failed[0].detail
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    assert [e["cause"] for e in events][:1] == ["out_of_memory"] and any(e["ok"] for e in events)


def test_a_device_with_no_memory_left_declines_by_its_own_policy(tmp_path: Path) -> None:
    raw = tiny(fleet={"tiers": {"flagship_phone": 1}}, orchestration={"clients_per_round": 1, "rounds": 1},
               batching={"mode": "dynamic"})
    # A 1-byte limit leaves nothing once the process's own RSS is taken off: no sample fits.
    run, codes = deployed_run(tmp_path, raw, [DeviceOptions(shard=(0, 1), memory_limit_bytes=1)])
    assert codes == [0]
    failed = run.store.tasks("failed")
    assert failed and all(t.detail.startswith("declined: ") for t in failed)
    assert run.store.journal() == []


def test_the_async_orchestrator_runs_over_the_same_fleet(tmp_path: Path) -> None:
    raw = tiny(orchestration={"mode": "async", "rounds": 3}, asynchronous={"buffer_size": 2, "concurrency": 2})
    run, codes = deployed_run(tmp_path, raw, [DeviceOptions(shard=(0, 2)), DeviceOptions(shard=(1, 2))])
    assert codes == [0, 0]
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == 3 and run.store.progress().version == 3
    assert sum(e.applied_version is not None for e in run.store.journal()) >= 6  # 3 versions × a buffer of 2


def test_local_data_from_an_npz_is_checked_against_the_model(tmp_path: Path) -> None:
    import numpy as np

    from fedfit.errors import DataError
    from fedfit.models import ModelSpec
    from fedfit.transport.device import local_data

    config, spec = parse_config(tiny()), ModelSpec("logreg", (1, 8, 8), 10)
    good = tmp_path / "good.npz"
    np.savez(good, x=np.zeros((5, 1, 8, 8), dtype=np.float32), y=np.array([0, 1, 2, 3, 9]))
    x, y = local_data(config, spec, DeviceOptions(data=good))
    assert tuple(x.shape) == (5, 1, 8, 8) and y.tolist() == [0, 1, 2, 3, 9]
    for name, arrays in {"shape": {"x": np.zeros((5, 64)), "y": np.zeros(5)},
                         "labels": {"x": np.zeros((2, 1, 8, 8)), "y": np.array([0, 10])},
                         "keys": {"images": np.zeros((2, 1, 8, 8))}}.items():
        bad = tmp_path / f"{name}.npz"
        np.savez(bad, **arrays)  # type: ignore[arg-type]
        with pytest.raises(DataError, match=str(bad)):
            local_data(config, spec, DeviceOptions(data=bad))
    with pytest.raises(DataError, match="--shard"):
        local_data(config, spec, DeviceOptions(shard=(0, 3)))


def test_sub_models_and_partial_training_run_deployed(tmp_path: Path) -> None:
    # Half-width sub-models of an MLP, partial-parameter training (element masks travel with the
    # update) and FedNova: the strategies run from the same config keys as in simulation.
    raw = tiny(model={"name": "mlp"}, width={"mode": "fixed", "fixed": 0.5}, aggregation={"fednova": True},
               memory={"mode": "all", "techniques": ["partial"], "partial": {"keep_fraction": 0.5}})
    run, codes = deployed_run(tmp_path, raw, [DeviceOptions(shard=(0, 2)), DeviceOptions(shard=(1, 2))])
    assert codes == [0, 0] and run.store.progress().version == 2
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    assert events and all(e["ok"] and e["width"] == 0.5 and e["techniques"] == ["partial"] for e in events)
    assert all(e.applied_version is not None for e in run.store.journal())


@pytest.mark.slow
def test_oort_selection_fairness_weights_and_checkpointing_run_deployed(tmp_path: Path) -> None:
    # The same config keys as in simulation: Oort selection (with deferral), q-fair loss weights
    # and activation checkpointing on every plan (partial training: the test above).
    raw = tiny(model={"name": "mlp"}, selection={"kind": "oort"}, aggregation={"fairness_q": 1.0},
               memory={"mode": "all", "techniques": ["checkpointing"]})
    run, codes = deployed_run(tmp_path, raw, [DeviceOptions(shard=(0, 2)), DeviceOptions(shard=(1, 2))])
    assert codes == [0, 0] and run.store.progress().version == 2
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    assert events and all(e["ok"] and e["techniques"] == ["checkpointing"] for e in events)
    assert sum(e.applied_version is not None for e in run.store.journal()) == 4
