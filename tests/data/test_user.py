"""The user's own data: accepted forms, fedfit's partitioners, per-device data, one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import TensorDataset

from fedfit.data.user import as_array_dataset, device_sources, federate, npz_sources, split_sources
from fedfit.errors import DataError


def pair(n: int, classes: int = 3, features: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.arange(n * features, dtype=torch.float32).reshape(n, features), torch.arange(n) % classes


def test_a_torch_dataset_becomes_float_inputs_and_integer_labels() -> None:
    tokens = torch.tensor([[1, 5], [7, 2], [3, 3]])
    data = as_array_dataset(TensorDataset(tokens, torch.tensor([0, 2, 1])), "train")
    assert data.x.dtype == torch.float32 and torch.equal(data.x.long(), tokens)
    assert data.y.tolist() == [0, 2, 1]


def test_numpy_pairs_are_accepted() -> None:
    data = as_array_dataset((np.ones((4, 3)), np.array([0, 1, 1, 0])), "train")
    assert tuple(data.x.shape) == (4, 3) and data.y.dtype == torch.int64


def test_x_and_y_of_different_lengths_are_one_line_errors() -> None:
    with pytest.raises(DataError, match=r"^data.train: x \(4, 2\) and y \(3,\) disagree"):
        as_array_dataset((torch.zeros(4, 2), torch.zeros(3)), "data.train")


def test_fedfits_partitioner_splits_a_loader_train_set_over_the_fleet() -> None:
    data = federate(split_sources(pair(60), pair(9)), num_devices=3, partition="iid", seed=1,
                    local_test_fraction=0.2)
    assert [len(d) for d in data.train] == [16, 16, 16] and [len(d) for d in data.test] == [4, 4, 4]
    assert len(data.global_test) == 9 and data.num_classes == 3 and data.input_shape == (2,)
    seen = torch.cat([d.x for d in data.train + data.test])[:, 0]
    assert sorted(seen.tolist()) == [2.0 * i for i in range(60)]  # every sample once


def test_per_device_data_keeps_its_own_split() -> None:
    data = federate(device_sources({0: pair(10), 1: pair(20)}), num_devices=2, partition="dirichlet", seed=0,
                    local_test_fraction=0.1)
    assert [len(d) for d in data.train] == [9, 18]
    assert len(data.global_test) == 1 + 2  # the devices' held-out samples


def test_labels_beyond_num_classes_are_refused() -> None:
    with pytest.raises(DataError, match=r"^data device 0: label 2 out of range 0..1$"):
        federate(device_sources({0: pair(6, classes=3)}), num_devices=1, partition="iid", seed=0, num_classes=2)


def test_negative_labels_are_refused() -> None:
    x, y = pair(6)
    with pytest.raises(DataError, match="label -1 out of range"):
        federate(device_sources({0: (x, y - 1)}), num_devices=1, partition="iid", seed=0)


def test_devices_with_different_input_shapes_are_refused() -> None:
    with pytest.raises(DataError, match=r"^data device 1: input shape \(3,\) differs from device 0's \(2,\)$"):
        federate(device_sources({0: pair(6), 1: pair(6, features=3)}), num_devices=2, partition="iid", seed=0)


def test_an_empty_device_is_refused() -> None:
    with pytest.raises(DataError, match=r"^data device 1: has no samples$"):
        device_sources({0: pair(4), 1: pair(0)})


def test_a_partition_that_leaves_a_device_empty_is_refused() -> None:
    with pytest.raises(DataError, match="4 devices"):
        federate(split_sources(pair(3), pair(3)), num_devices=4, partition="iid", seed=0)


def test_per_device_data_must_match_the_fleet() -> None:
    with pytest.raises(DataError, match="2 devices' data for a fleet of 3 devices"):
        federate(device_sources({0: pair(4), 1: pair(4)}), num_devices=3, partition="iid", seed=0)


def test_device_keys_must_be_the_ids_from_zero() -> None:
    with pytest.raises(DataError, match="device ids 0..1"):
        device_sources({1: pair(4), 2: pair(4)})


def test_a_directory_of_npz_files_is_one_device_per_file_and_test_npz_the_global_test(tmp_path: Path) -> None:
    for name, n in (("a.npz", 5), ("b.npz", 7), ("test.npz", 4)):
        x, y = pair(n)
        np.savez(tmp_path / name, x=x.numpy(), y=y.numpy())
    sources = npz_sources(tmp_path)
    assert [len(d) for d in sources.devices] == [5, 7] and sources.test is not None and len(sources.test) == 4


def test_an_npz_file_without_x_and_y_is_named(tmp_path: Path) -> None:
    np.savez(tmp_path / "a.npz", inputs=np.zeros(3))
    with pytest.raises(DataError, match=r"a.npz: needs arrays 'x' and 'y'"):
        npz_sources(tmp_path)
