"""Fashion-MNIST's pixels normalised as each device's share is taken, bit for bit as the whole set
normalised at once and then split (the loader before ``RawImages``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from fedfit.data import build_federated_data
from fedfit.data import federated
from fedfit.data.datasets import (
    FASHION_MNIST_MEAN,
    FASHION_MNIST_STD,
    ArrayDataset,
    RawImages,
    load_fashion_mnist,
    load_fashion_mnist_raw,
)


def _whole_then_split(pixels: torch.Tensor, y: torch.Tensor) -> ArrayDataset:
    """The old loader's normalisation: the whole set in float32, scaled, centred, divided."""
    x = pixels.to(torch.float32).div_(255.0)
    return ArrayDataset(x=x.sub_(FASHION_MNIST_MEAN).div_(FASHION_MNIST_STD), y=y)


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32)


@pytest.mark.parametrize("indices", [np.arange(0, 4000, 7)[::-1].copy(), [5, 5, 0, 3999], [-1, 2, -4000], [],
                                     np.random.default_rng(1).integers(0, 4000, 1111)])
def test_a_subset_is_the_whole_set_normalised_then_gathered_bit_for_bit(indices: list[int] | np.ndarray) -> None:
    gen = torch.Generator().manual_seed(0)
    pixels = torch.randint(0, 256, (4000, 1, 28, 28), dtype=torch.uint8, generator=gen)  # every value, everywhere
    y = torch.randint(0, 10, (4000,), generator=gen)
    raw = RawImages(pixels, y, FASHION_MNIST_MEAN, FASHION_MNIST_STD)
    old = _whole_then_split(pixels, y)

    got, want = raw.subset(indices), old.subset(indices)

    assert torch.equal(_bits(got.x), _bits(want.x)) and torch.equal(got.y, want.y)
    assert got.x.dtype == torch.float32 and got.x.shape == want.x.shape and len(raw) == 4000
    assert torch.equal(_bits(raw.whole().x), _bits(old.x))


def test_the_loaders_agree(fake_fashion_dir: Path) -> None:
    train, test = load_fashion_mnist(fake_fashion_dir)
    raw_train, raw_test = load_fashion_mnist_raw(fake_fashion_dir)

    assert raw_train.pixels.dtype == torch.uint8 and raw_train.pixels.shape == (60, 1, 28, 28)
    for whole, raw in ((train, raw_train), (test, raw_test)):
        assert torch.equal(_bits(whole.x), _bits(raw.whole().x)) and torch.equal(whole.y, raw.y)


@pytest.mark.parametrize(("partition", "max_train", "max_test", "held_out"),
                         [("iid", None, None, 0.0), ("iid", 45, 7, 0.2), ("dirichlet", None, 12, 0.1),
                          ("shards", 50, None, 0.25)])
def test_federated_data_equal_those_split_from_the_whole_normalised_set(
        fake_fashion_dir: Path, monkeypatch: pytest.MonkeyPatch, partition: str, max_train: int | None,
        max_test: int | None, held_out: float) -> None:
    kwargs = {"dataset": "fashion_mnist", "num_devices": 4, "partition": partition, "seed": 3,
              "path": str(fake_fashion_dir), "max_train_samples": max_train, "max_test_samples": max_test,
              "local_test_fraction": held_out}
    new = build_federated_data(**kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(federated, "_load_centralised", lambda dataset, path: load_fashion_mnist(path))
    old = build_federated_data(**kwargs)  # type: ignore[arg-type]

    pairs = [*zip(new.train, old.train, strict=True), *zip(new.test, old.test, strict=True),
             (new.global_test, old.global_test)]
    assert all(torch.equal(_bits(a.x), _bits(b.x)) and torch.equal(a.y, b.y) for a, b in pairs)
    assert isinstance(new.global_test, ArrayDataset) and all(isinstance(d, ArrayDataset) for d in new.train)
