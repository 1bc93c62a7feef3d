"""Fixtures for the data tests: a tiny Fashion-MNIST folder written with ``write_idx``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from fedfit.data.idx import write_idx

FAKE_TRAIN_SIZE = 60
FAKE_TEST_SIZE = 20


def write_fake_fashion_mnist(folder: Path, *, gz: bool, seed: int = 0) -> dict[str, np.ndarray]:
    """Write the four IDX files of a tiny Fashion-MNIST; return the arrays written, by stem."""
    rng = np.random.default_rng(seed)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (FAKE_TRAIN_SIZE, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": np.arange(FAKE_TRAIN_SIZE, dtype=np.uint8) % 10,
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (FAKE_TEST_SIZE, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": np.arange(FAKE_TEST_SIZE, dtype=np.uint8)[::-1] % 10,
    }
    folder.mkdir(parents=True, exist_ok=True)
    for stem, array in arrays.items():
        write_idx(folder / (f"{stem}.gz" if gz else stem), array)
    return arrays


@pytest.fixture
def fake_fashion_writer() -> Callable[..., dict[str, np.ndarray]]:
    """``write_fake_fashion_mnist`` itself, for tests that need the plain or a custom variant."""
    return write_fake_fashion_mnist


@pytest.fixture
def fake_fashion_dir(tmp_path: Path) -> Path:
    """A folder holding a 60/20-example Fashion-MNIST as gzipped IDX files."""
    folder = tmp_path / "fashion"
    write_fake_fashion_mnist(folder, gz=True)
    return folder
