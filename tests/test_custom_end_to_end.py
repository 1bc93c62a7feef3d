"""A user module and user data train from YAML and from Python; what does not fit is one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fedfit
from fedfit.errors import ConfigError, DataError
from tests.custom_modules import blobs, tiny_mlp


def config(**sections: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "seed": 0,
        "fleet": {"tiers": {"flagship_phone": 2, "midrange_phone": 2}},
        "data": {"loader": "tests.custom_modules:blobs", "partition": {"kind": "iid"}},
        "model": {"factory": "tests.custom_modules:tiny_mlp", "kwargs": {"hidden": 8}},
        "training": {"batch_size": 8, "lr": 0.1},
        "orchestration": {"rounds": 2, "clients_per_round": 4},
        "output": {"progress": False, "plots": False},
    }
    for key, value in sections.items():
        base[key] = {**base.get(key, {}), **value}
    return base


@pytest.mark.slow
@pytest.mark.parametrize("technique", ["checkpointing", "selective", "partial", "pruning", "qat", "split",
                                       "progressive"])
def test_a_yaml_named_module_and_loader_train_with_each_memory_technique(technique: str) -> None:
    cfg = config(batching={"mode": "dynamic"}, memory={"mode": "all", "techniques": [technique]})
    result = fedfit.run(cfg)
    assert result.rounds == 2 and result.final_accuracy is not None
    assert sum(result.participants_by_tier.values()) > 0


@pytest.mark.slow
def test_python_objects_train_and_the_run_directory_records_the_factory(tmp_path: Path) -> None:
    result = fedfit.run(config(), model=tiny_mlp, data=blobs(), run_dir=tmp_path / "run")
    assert result.final_accuracy is not None and result.final_accuracy > 1 / 3  # better than chance
    assert '"factory": "tests.custom_modules:tiny_mlp"' in (tmp_path / "run" / "model.json").read_text()


@pytest.mark.slow
def test_per_device_npz_files_train(tmp_path: Path) -> None:
    (train_x, train_y), _ = blobs()
    for device, rows in enumerate(np.array_split(np.arange(len(train_y)), 4)):
        np.savez(tmp_path / f"device{device}.npz", x=train_x[rows].numpy(), y=train_y[rows].numpy())
    result = fedfit.run(config(data={"loader": None, "devices_dir": str(tmp_path)}))
    assert result.rounds == 2


@pytest.mark.slow
def test_compare_runs_each_strategy_on_the_users_model() -> None:
    results = fedfit.compare(config(), ["fedavg", "dynamic"], model=tiny_mlp, data=blobs)
    assert list(results) == ["fedavg", "dynamic"]
    assert all(r.rounds == 2 for r in results.values())


def test_dynamic_width_on_a_module_without_width_groups_names_the_module() -> None:
    with pytest.raises(ConfigError, match=r"^width.mode: model tests.custom_modules:tiny_mlp declares no width groups"):
        fedfit.run(config(width={"mode": "capability"}))


def test_stage_techniques_on_a_non_sequential_module_name_it() -> None:
    cfg = config(model={"factory": "tests.custom_modules:skip_across", "kwargs": {}},
                 memory={"mode": "all", "techniques": ["checkpointing"]})
    with pytest.raises(ConfigError, match="model tests.custom_modules:skip_across: its children in order"):
        fedfit.run(cfg)


def test_logits_that_do_not_fit_the_labels_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"returns \(2, 3\) for a batch of 2, needs \(batch, 5\) logits"):
        fedfit.run(config(data={"num_classes": 5}, model={"kwargs": {"num_classes": 3}}))


def test_a_result_field_that_summary_json_lacks_is_an_attribute_error() -> None:
    result = fedfit.Result({"rounds": 3}, (), {})
    assert result.rounds == 3
    with pytest.raises(AttributeError, match="no field 'accuracy'"):
        _ = result.accuracy


def test_loader_and_devices_dir_together_are_refused() -> None:
    with pytest.raises(ConfigError, match="data.loader or data.devices_dir"):
        fedfit.run(config(data={"devices_dir": "/nowhere"}))


def test_a_missing_devices_dir_is_a_data_error() -> None:
    with pytest.raises(DataError, match="no such directory: /nowhere"):
        fedfit.run(config(data={"loader": None, "devices_dir": "/nowhere"}))


@pytest.mark.slow
def test_the_custom_model_example_trains_both_user_modules() -> None:
    import importlib.util
    path = Path(__file__).resolve().parents[1] / "examples" / "custom_model.py"
    spec = importlib.util.spec_from_file_location("custom_model_example", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    results = example.main(rounds=1)
    assert set(results) == {"resnet-digits", "gru-text"}
    assert all(r.rounds == 1 and r.final_accuracy is not None for r in results.values())


def test_a_lambda_cannot_go_to_process_workers() -> None:
    with pytest.raises(ConfigError, match="^simulation.executor: process workers cannot receive model"):
        fedfit.run(config(simulation={"executor": "process"}), model=lambda input_shape, num_classes: tiny_mlp(
            input_shape, num_classes))


@pytest.mark.slow
def test_process_workers_train_a_user_module_as_the_local_executor_does() -> None:
    local = fedfit.run(config(), model=tiny_mlp, data=blobs)
    pooled = fedfit.run(config(simulation={"executor": "process", "workers": 1}), model=tiny_mlp, data=blobs)
    assert pooled.final_accuracy == local.final_accuracy and pooled.virtual_time_s == local.virtual_time_s
