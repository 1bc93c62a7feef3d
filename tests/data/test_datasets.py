"""ArrayDataset, the Fashion-MNIST loader on tiny files, and the bundled digits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import sklearn.datasets  # type: ignore[import-untyped]
import torch

from fedfit.data.datasets import (
    FASHION_MNIST_DIR,
    ArrayDataset,
    concatenate,
    load_digits,
    load_fashion_mnist,
)
from fedfit.data.idx import write_idx
from fedfit.errors import DataError

FakeWriter = Callable[..., dict[str, np.ndarray]]


def _dataset(n: int) -> ArrayDataset:
    return ArrayDataset(x=torch.arange(n * 2, dtype=torch.float32).reshape(n, 2), y=torch.arange(n))


def test_subset_picks_rows_in_the_given_order() -> None:
    data = _dataset(5)

    picked = data.subset(np.array([4, 1]))

    assert len(picked) == 2
    assert picked.x.tolist() == [[8.0, 9.0], [2.0, 3.0]]
    assert picked.y.tolist() == [4, 1]


def test_array_dataset_rejects_wrong_dtypes_and_lengths() -> None:
    with pytest.raises(DataError):
        ArrayDataset(x=torch.zeros(3, 2, dtype=torch.float64), y=torch.zeros(3, dtype=torch.int64))
    with pytest.raises(DataError):
        ArrayDataset(x=torch.zeros(3, 2), y=torch.zeros(4, dtype=torch.int64))


def test_concatenate_stacks_in_order() -> None:
    joined = concatenate([_dataset(2), _dataset(3)])

    assert joined.y.tolist() == [0, 1, 0, 1, 2]


@pytest.mark.parametrize("gz", [True, False])
def test_fashion_mnist_loads_tiny_files_scaled_and_normalised(
    tmp_path: Path, fake_fashion_writer: FakeWriter, gz: bool
) -> None:
    written = fake_fashion_writer(tmp_path, gz=gz)

    train, test = load_fashion_mnist(tmp_path)

    assert train.x.shape == (60, 1, 28, 28) and test.x.shape == (20, 1, 28, 28)
    assert train.x.dtype == torch.float32 and train.y.dtype == torch.int64
    expected = (written["train-images-idx3-ubyte"].astype(np.float64) / 255.0 - 0.2860) / 0.3530
    np.testing.assert_allclose(train.x[:, 0].numpy(), expected, rtol=1e-5, atol=1e-5)
    assert test.y.tolist() == written["t10k-labels-idx1-ubyte"].tolist()


def test_fashion_mnist_missing_folder_names_path_and_the_debian_package(tmp_path: Path) -> None:
    folder = tmp_path / "nowhere"

    with pytest.raises(DataError) as caught:
        load_fashion_mnist(folder)

    message = str(caught.value)
    assert str(folder / "train-images-idx3-ubyte") in message
    assert "apt-get install dataset-fashion-mnist" in message and "\n" not in message


def test_fashion_mnist_label_count_mismatch_names_the_labels_file(
    tmp_path: Path, fake_fashion_writer: FakeWriter
) -> None:
    fake_fashion_writer(tmp_path, gz=False)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.zeros(19, dtype=np.uint8))

    with pytest.raises(DataError, match="t10k-labels-idx1-ubyte"):
        load_fashion_mnist(tmp_path)


def test_fashion_mnist_wrong_image_size_names_the_images_file(
    tmp_path: Path, fake_fashion_writer: FakeWriter
) -> None:
    fake_fashion_writer(tmp_path, gz=False)
    write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((60, 8, 8), dtype=np.uint8))

    with pytest.raises(DataError, match="train-images-idx3-ubyte"):
        load_fashion_mnist(tmp_path)


def test_digits_have_shape_n_1_8_8_in_unit_range_and_ten_classes() -> None:
    train, test = load_digits()

    assert train.x.shape[1:] == (1, 8, 8) and test.x.shape[1:] == (1, 8, 8)
    assert len(train) + len(test) == 1797
    assert float(train.x.min()) >= 0.0 and float(train.x.max()) <= 1.0
    assert sorted(set(train.y.tolist())) == list(range(10))


def test_digits_split_is_stratified_80_20_and_covers_every_image() -> None:
    reference = np.bincount(sklearn.datasets.load_digits().target, minlength=10)

    train, test = load_digits()

    train_counts = np.bincount(train.y.numpy(), minlength=10)
    test_counts = np.bincount(test.y.numpy(), minlength=10)
    np.testing.assert_array_equal(train_counts + test_counts, reference)
    np.testing.assert_allclose(test_counts / reference, 0.2, atol=0.02)


def test_digits_split_is_the_same_on_every_call() -> None:
    first_train, first_test = load_digits()
    second_train, second_test = load_digits()

    assert torch.equal(first_train.x, second_train.x) and torch.equal(first_test.y, second_test.y)


@pytest.mark.slow
@pytest.mark.skipif(
    not Path(FASHION_MNIST_DIR).is_dir(), reason="dataset-fashion-mnist not installed"
)
def test_installed_fashion_mnist_has_60000_train_and_10000_test_images() -> None:
    train, test = load_fashion_mnist(FASHION_MNIST_DIR)

    assert train.x.shape == (60000, 1, 28, 28) and test.x.shape == (10000, 1, 28, 28)
    assert np.bincount(train.y.numpy()).tolist() == [6000] * 10
    assert abs(float(train.x.mean())) < 0.01 and abs(float(train.x.std()) - 1.0) < 0.01


@pytest.mark.parametrize("indices", [[4, 0, 4, 2], [], [-1, 0, -5], np.array([3, 3, 3])])
def test_subset_gathers_exactly_what_advanced_indexing_does(indices: list[int] | np.ndarray) -> None:
    gen = torch.Generator().manual_seed(0)
    data = ArrayDataset(x=torch.randn((5, 1, 3, 3), generator=gen), y=torch.arange(5) * 7)
    index = torch.as_tensor(np.asarray(indices, dtype=np.int64))

    part = data.subset(indices)

    assert torch.equal(part.x, data.x[index]) and torch.equal(part.y, data.y[index])
    assert part.x.shape == (len(index), 1, 3, 3) and part.x.is_contiguous()


def test_subset_out_of_range_raises() -> None:
    data = ArrayDataset(x=torch.zeros((3, 2)), y=torch.zeros(3, dtype=torch.int64))
    with pytest.raises((IndexError, RuntimeError)):
        data.subset([0, 3])
