"""Fashion-MNIST upsampled to an on-device input size (the realistic catalogue's data)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fedfit.data.datasets import load_fashion_mnist
from fedfit.data.upsampled import load
from fedfit.errors import DataError
from tests.helpers import write_fashion_like


def test_images_are_upsampled_grey_copies_over_three_channels(tmp_path: Path) -> None:
    folder = write_fashion_like(tmp_path / "fm", n_train=50, n_test=20)
    (x, y), (tx, ty) = load(side=64, channels=3, train_samples=10, test_samples=5, path=folder)
    assert (x.shape, y.shape, tx.shape, ty.shape) == ((10, 3, 64, 64), (10,), (5, 3, 64, 64), (5,))
    assert torch.equal(x[:, 0], x[:, 2])
    assert set(y.tolist()) <= set(load_fashion_mnist(folder)[0].y.tolist())


def test_the_subset_is_seeded(tmp_path: Path) -> None:
    folder = write_fashion_like(tmp_path / "fm", n_train=50, n_test=20)
    first = load(side=32, train_samples=8, test_samples=4, path=folder, seed=3)
    again = load(side=32, train_samples=8, test_samples=4, path=folder, seed=3)
    assert torch.equal(first[0][0], again[0][0]) and torch.equal(first[0][1], again[0][1])


def test_side_28_without_resizing_keeps_the_pixels(tmp_path: Path) -> None:
    folder = write_fashion_like(tmp_path / "fm", n_train=30, n_test=10)
    (x, y), _ = load(side=28, channels=1, train_samples=30, test_samples=10, path=folder)
    train, _ = load_fashion_mnist(folder)
    assert torch.allclose(x, train.x) and torch.equal(y, train.y)


def test_a_side_below_28_is_a_data_error() -> None:
    with pytest.raises(DataError, match="side >= 28"):
        load(side=16)
