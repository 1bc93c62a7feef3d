"""Dynamic width from a config: sub-model payloads, sensors training, export/evaluate/prune."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from fedfit.cli import main
from fedfit.cost import MemoryModel, measure
from fedfit.config import ExperimentConfig
from fedfit.errors import PlanError
from fedfit.runner import run
from fedfit.models import ModelSpec
from fedfit.report.model_file import load_exported
from tests.helpers import write_fashion_like
from tests.test_end_to_end import small


def _config(**sections: dict) -> ExperimentConfig:
    """The end-to-end tests' small digits run, two rounds on six phones, with ``sections`` merged in."""
    base = {"fleet": {"tiers": {"flagship_phone": 3, "midrange_phone": 3}}, "orchestration": {"rounds": 2}}
    for key, value in sections.items():
        base[key] = {**base.get(key, {}), **value}
    return small(**base)


def test_each_device_downloads_and_uploads_only_its_sub_model() -> None:
    result = run(_config(width={"mode": "fixed", "fixed": 0.5}))
    sub_bytes = 4 * sum(p.numel() for p in ModelSpec("cnn", (1, 8, 8), 10).build(0.5).parameters())
    for report in result.reports:
        successes = sum(report.participants_by_tier.values())
        assert report.bytes_up == successes * sub_bytes
    assert sum(r.bytes_up for r in result.reports) > 0


def test_a_width_plan_on_a_model_without_hidden_layers_is_a_plan_error() -> None:
    with pytest.raises(PlanError, match="no hidden dimension"):
        run(_config(model={"name": "logreg"}, width={"mode": "fixed", "fixed": 0.5}))


def test_sensors_train_a_tiny_sub_model_within_their_memory(tmp_path: Path) -> None:
    fashion = write_fashion_like(tmp_path / "fashion", n_train=600)
    raw = _config(data={"dataset": "fashion_mnist", "path": str(fashion)},
                  fleet={"tiers": {"sensor_mcu": 4, "flagship_phone": 2}},
                  training={"batch_size": 32}, width={"mode": "capability"},
                  orchestration={"rounds": 2, "clients_per_round": 6})
    run(raw, tmp_path / "run")
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    sensors = [e for e in events if e["tier"] == "sensor_mcu" and e["ok"]]
    assert sensors, "no sensor update arrived"
    spec = ModelSpec("cnn", (1, 28, 28), 10)
    for e in sensors:
        assert 4 * sum(p.numel() for p in spec.build(e["width"]).parameters()) < 50_000
        assert e["peak_memory_bytes"] <= e["free_memory_bytes"] <= 384 * 1024
    floor = MemoryModel().peak_bytes(measure(spec, 0.0625), 1)  # the least any plan can need
    for e in events:  # a sensor only runs out of memory when even one sample at the smallest width cannot fit
        if e["tier"] == "sensor_mcu" and e["cause"] == "out_of_memory":
            assert e["free_memory_bytes"] < floor


@pytest.mark.slow
def test_export_evaluate_and_prune_a_finished_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = _config(model={"name": "mlp"}, width={"mode": "random", "widths": [1.0, 0.5]})
    run(raw, tmp_path / "run")
    assert main(["export", str(tmp_path / "run"), "--width", "0.25", "--out", str(tmp_path / "exp")]) == 0
    master = load_file(str(tmp_path / "run" / "model.safetensors"))
    model = load_exported(tmp_path / "exp")
    x = torch.randn(7, 1, 8, 8)
    h = torch.relu(x.flatten(1) @ master["fc1.weight"][:50].T + master["fc1.bias"][:50])
    h = torch.relu(h @ master["fc2.weight"][:50, :50].T + master["fc2.bias"][:50])
    expected = h @ master["fc3.weight"][:, :50].T + master["fc3.bias"]
    assert torch.allclose(model(x), expected, atol=1e-5)
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "run"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["width"] for r in rows] == [1.0, 0.5, 0.25, 0.125, 0.0625]
    assert [r["num_params"] for r in rows] == [sum(p.numel() for p in ModelSpec("mlp", (1, 8, 8), 10).build(w).parameters())
                                               for w in (1.0, 0.5, 0.25, 0.125, 0.0625)]
    assert main(["prune", str(tmp_path / "run"), "--json"]) == 0
    suggestion = json.loads(capsys.readouterr().out)
    assert 0 < suggestion["width"] <= 1 and {g["group"] for g in suggestion["groups"]} == {"fc1", "fc2"}


def test_exported_batch_norm_cnn_runs_alone_and_matches_evaluate(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    raw = _config(model={"norm": "batch"}, width={"mode": "capability", "scaler": True, "indices": "importance"})
    run(raw, tmp_path / "run")
    assert main(["export", str(tmp_path / "run"), "--width", "0.5", "--out", str(tmp_path / "exp")]) == 0
    model = load_exported(tmp_path / "exp")
    assert {"norm1.running_mean", "norm2.running_var"} <= set(model.state_dict())
    assert model(torch.randn(3, 1, 8, 8)).shape == (3, 10)
    capsys.readouterr()
    main(["evaluate", str(tmp_path / "run"), "--json"])
    half = json.loads(capsys.readouterr().out)[1]
    assert half["num_params"] == sum(p.numel() for p in model.parameters())


def test_run_dir_commands_reject_bad_input_with_exit_2(tmp_path: Path) -> None:
    assert main(["evaluate", str(tmp_path / "missing")]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["prune", str(tmp_path / "empty")]) == 2
    assert main(["export", str(tmp_path / "empty"), "--width", "0"]) == 2


def test_federated_dropout_run_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    config = _config(width={"mode": "random", "indices": "random", "widths": [1.0, 0.5, 0.25]})
    first, second = run(config, tmp_path / "a"), run(config, tmp_path / "b")
    assert (tmp_path / "a" / "events.jsonl").read_text() == (tmp_path / "b" / "events.jsonl").read_text()
    assert all(torch.equal(first.params[k], second.params[k]) for k in first.params)
    widths = {json.loads(line)["width"] for line in (tmp_path / "a" / "events.jsonl").read_text().splitlines()}
    assert len(widths) > 1
