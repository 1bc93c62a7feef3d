"""build_federated_data on digits, synthetic and a tiny Fashion-MNIST; its errors."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from fedfit.data.datasets import load_digits
from fedfit.data.federated import FederatedData, build_federated_data
from fedfit.errors import DataError

DIGITS_TRAIN, DIGITS_TEST = 1437, 360


def _sizes(data: FederatedData) -> tuple[list[int], list[int]]:
    return [len(d) for d in data.train], [len(d) for d in data.test]


@pytest.mark.parametrize("partition", ["iid", "dirichlet", "shards"])
def test_digits_devices_share_the_training_set_and_keep_the_official_test_set(
    partition: str,
) -> None:
    data = build_federated_data(dataset="digits", num_devices=8, partition=partition, seed=0)

    train_sizes, test_sizes = _sizes(data)
    assert data.num_devices == 8 and data.num_classes == 10 and data.input_shape == (1, 8, 8)
    assert sum(train_sizes) + sum(test_sizes) == DIGITS_TRAIN
    assert len(data.global_test) == DIGITS_TEST
    assert all(size >= 1 for size in train_sizes)


def test_local_test_fraction_holds_out_that_share_of_each_device_rounded_down() -> None:
    data = build_federated_data(
        dataset="digits", num_devices=5, partition="iid", seed=1, local_test_fraction=0.25
    )

    for train, test in zip(data.train, data.test, strict=True):
        share = len(train) + len(test)
        assert len(test) == int(0.25 * share)


def test_local_split_keeps_one_training_sample_on_a_one_sample_device() -> None:
    data = build_federated_data(
        dataset="digits",
        num_devices=4,
        partition="iid",
        seed=2,
        max_train_samples=4,
        local_test_fraction=0.9,
    )

    assert _sizes(data) == ([1, 1, 1, 1], [0, 0, 0, 0])


def test_device_data_are_disjoint_rows_of_the_training_set() -> None:
    data = build_federated_data(
        dataset="digits", num_devices=6, partition="dirichlet", seed=3, dirichlet_alpha=0.3
    )

    rows = torch.cat([d.x for d in data.train + data.test]).flatten(1)
    reference = load_digits()[0].x.flatten(1)
    # equal as multisets of rows: the same distinct rows, each as often
    got_rows, got_counts = torch.unique(rows, dim=0, return_counts=True)
    want_rows, want_counts = torch.unique(reference, dim=0, return_counts=True)
    assert torch.equal(got_rows, want_rows) and torch.equal(got_counts, want_counts)


def test_same_seed_gives_the_same_federated_data() -> None:
    def build() -> FederatedData:
        return build_federated_data(
            dataset="digits",
            num_devices=4,
            partition="shards",
            seed=5,
            max_train_samples=400,
            max_test_samples=50,
        )

    first, second = build(), build()

    assert all(torch.equal(a.x, b.x) for a, b in zip(first.train, second.train, strict=True))
    assert torch.equal(first.global_test.y, second.global_test.y)


def test_max_train_and_test_samples_subsample() -> None:
    data = build_federated_data(
        dataset="digits",
        num_devices=3,
        partition="iid",
        seed=6,
        max_train_samples=300,
        max_test_samples=40,
    )

    train_sizes, test_sizes = _sizes(data)
    assert sum(train_sizes) + sum(test_sizes) == 300
    assert len(data.global_test) == 40


def test_synthetic_natural_pools_device_test_sets_into_the_global_test() -> None:
    data = build_federated_data(
        dataset="synthetic",
        num_devices=7,
        partition="natural",
        seed=7,
        synthetic_alpha=0.5,
        synthetic_beta=0.5,
    )

    train_sizes, test_sizes = _sizes(data)
    assert data.input_shape == (60,) and data.num_classes == 10
    assert len(data.global_test) == sum(test_sizes)
    assert all(
        train == int(0.9 * (train + test))
        for train, test in zip(train_sizes, test_sizes, strict=True)
    )
    assert torch.equal(data.global_test.y[: test_sizes[0]], data.test[0].y)


def test_synthetic_max_train_samples_bounds_the_training_total() -> None:
    data = build_federated_data(
        dataset="synthetic",
        num_devices=10,
        partition="natural",
        seed=8,
        synthetic_iid=True,
        max_train_samples=500,
        max_test_samples=30,
    )

    train_sizes, _ = _sizes(data)
    assert sum(train_sizes) <= 500 and max(train_sizes) <= 50
    assert len(data.global_test) == 30


def test_fake_fashion_mnist_folder_builds_with_shards(fake_fashion_dir: Path) -> None:
    data = build_federated_data(
        dataset="fashion_mnist",
        num_devices=5,
        partition="shards",
        seed=9,
        path=str(fake_fashion_dir),
        shards_per_device=2,
        max_test_samples=7,
    )

    train_sizes, test_sizes = _sizes(data)
    assert data.input_shape == (1, 28, 28) and data.train[0].x.shape[1:] == (1, 28, 28)
    assert sum(train_sizes) + sum(test_sizes) == 60 and len(data.global_test) == 7
    # the fake labels are balanced (6 per class) and shards hold 6, so 2 shards = 2 labels at most
    for train, test in zip(data.train, data.test, strict=True):
        assert len(np.unique(torch.cat([train.y, test.y]).numpy())) <= 2


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"dataset": "cifar10", "partition": "iid"}, "fashion_mnist, digits, synthetic"),
        ({"dataset": "digits", "partition": "pathological"}, "iid, dirichlet, shards, natural"),
        ({"dataset": "digits", "partition": "natural"}, "synthetic takes only"),
        ({"dataset": "synthetic", "partition": "iid"}, "synthetic takes only 'natural'"),
        (
            {"dataset": "digits", "partition": "iid", "local_test_fraction": 1.0},
            "local_test_fraction",
        ),
        ({"dataset": "digits", "partition": "iid", "max_train_samples": 0}, "max_train_samples"),
        ({"dataset": "digits", "partition": "dirichlet", "dirichlet_alpha": 0.0}, "alpha"),
    ],
)
def test_bad_requests_raise_one_line_data_errors(
    arguments: dict[str, object], fragment: str
) -> None:
    with pytest.raises(DataError) as caught:
        build_federated_data(num_devices=4, seed=0, **arguments)  # type: ignore[arg-type]

    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_missing_fashion_mnist_folder_names_it(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=re.escape(str(tmp_path))):
        build_federated_data(
            dataset="fashion_mnist", num_devices=2, partition="iid", seed=0, path=str(tmp_path)
        )
