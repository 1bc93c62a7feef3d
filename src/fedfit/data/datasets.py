"""Centralised data sets as tensors: ``ArrayDataset`` and the loaders for Fashion-MNIST and digits.

Nothing here downloads. Fashion-MNIST (Xiao et al. 2017, arXiv:1708.07747) is read from the
IDX files Debian's ``dataset-fashion-mnist`` package installs; the 8x8 digits come bundled
with scikit-learn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from fedfit.data.idx import read_idx
from fedfit.errors import DataError
from fedfit.prefetch import FASHION_MNIST_DIR as FASHION_MNIST_DIR  # defined where torch is not imported
#: Per-pixel mean and standard deviation of the Fashion-MNIST training images, on [0, 1].
FASHION_MNIST_MEAN = 0.2860
FASHION_MNIST_STD = 0.3530
#: Seed of the fixed, stratified 80/20 train/test split of the digits.
DIGITS_SPLIT_SEED = 0
DIGITS_TEST_FRACTION = 0.2

_NUM_CLASSES = 10
_FASHION_SIDE_PX = 28


@dataclass(frozen=True, slots=True)
class ArrayDataset:
    """Examples and labels held in memory.

    Attributes:
        x: Inputs, ``float32``, shape ``(n, *input_shape)``.
        y: Class labels, ``int64``, shape ``(n,)``.
    """

    x: torch.Tensor
    y: torch.Tensor

    def __post_init__(self) -> None:
        if self.x.dtype != torch.float32 or self.y.dtype != torch.int64:
            raise DataError(
                f"ArrayDataset needs float32 x and int64 y, got {self.x.dtype}, {self.y.dtype}"
            )
        if self.y.dim() != 1 or self.x.dim() < 1 or self.x.shape[0] != self.y.shape[0]:
            raise DataError(
                f"ArrayDataset x {tuple(self.x.shape)} and y {tuple(self.y.shape)} disagree"
            )

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def subset(self, indices: np.ndarray | torch.Tensor | Sequence[int]) -> ArrayDataset:
        """The examples at ``indices``, in that order.

        Args:
            indices: Integer positions into this data set (repeats allowed).

        Returns:
            A new ``ArrayDataset`` with ``len(indices)`` examples.
        """
        x, y = _gather(self.x, self.y, indices)
        return ArrayDataset(x=x, y=y)


def _gather(x: torch.Tensor, y: torch.Tensor,
            indices: np.ndarray | torch.Tensor | Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows of ``x`` and ``y`` at ``indices``, in that order."""
    index = torch.as_tensor(np.asarray(indices, dtype=np.int64))
    if index.numel() and int(index.min()) < 0:  # counted from the end, as Python's indexing does
        return x[index], y[index]
    # index_select: the gather advanced indexing does (same rows, same order), ~3x faster
    return torch.index_select(x, 0, index), torch.index_select(y, 0, index)


@dataclass(frozen=True, slots=True)
class RawImages:
    """8-bit images not yet scaled, normalised as they are taken: what an ``ArrayDataset`` of
    them would hold, made only for the examples a caller takes (:meth:`subset`).

    Normalising is elementwise (``x / 255``, ``- mean``, ``/ std`` in ``float32``), so an example
    comes out bit for bit the same whether it is normalised with the whole set or alone; taking
    each device's share from the 8-bit pixels gathers a quarter of the bytes and never holds a
    normalised copy of the whole set beside the devices' copies.

    Attributes:
        pixels: ``uint8``, shape ``(n, *input_shape)``.
        y: Class labels, ``int64``, shape ``(n,)``.
        mean: Subtracted after scaling to [0, 1].
        std: Divided by after subtracting ``mean``.
    """

    pixels: torch.Tensor
    y: torch.Tensor
    mean: float
    std: float

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def subset(self, indices: np.ndarray | torch.Tensor | Sequence[int]) -> ArrayDataset:
        """The examples at ``indices``, in that order, normalised (as :meth:`ArrayDataset.subset`)."""
        pixels, y = _gather(self.pixels, self.y, indices)
        return ArrayDataset(x=self._normalised(pixels), y=y)

    def whole(self) -> ArrayDataset:
        """Every example, normalised."""
        return ArrayDataset(x=self._normalised(self.pixels), y=self.y)

    def _normalised(self, pixels: torch.Tensor) -> torch.Tensor:
        return pixels.to(torch.float32).div_(255.0).sub_(self.mean).div_(self.std)


def concatenate(datasets: Sequence[ArrayDataset]) -> ArrayDataset:
    """Stack data sets of one input shape into one, in order.

    Args:
        datasets: At least one data set; all share ``x.shape[1:]``.

    Returns:
        An ``ArrayDataset`` holding every example of ``datasets``.

    Raises:
        DataError: ``datasets`` is empty or the input shapes differ.
    """
    if not datasets or len({tuple(part.x.shape[1:]) for part in datasets}) != 1:
        raise DataError("cannot concatenate data sets: none given or input shapes differ")
    return ArrayDataset(
        x=torch.cat([part.x for part in datasets]), y=torch.cat([part.y for part in datasets])
    )


def load_fashion_mnist(path: str | Path = FASHION_MNIST_DIR) -> tuple[ArrayDataset, ArrayDataset]:
    """Load Fashion-MNIST from its four IDX files (each plain or ``.gz``).

    Args:
        path: Folder holding ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
            ``t10k-images-idx3-ubyte`` and ``t10k-labels-idx1-ubyte`` (each optionally ``.gz``).

    Returns:
        ``(train, test)``; inputs ``float32`` of shape ``(n, 1, 28, 28)``, scaled to [0, 1] and
        then normalised with ``FASHION_MNIST_MEAN`` and ``FASHION_MNIST_STD``; labels
        ``int64`` in 0..9. The official files hold 60,000 and 10,000 examples.

    Raises:
        DataError: A file is missing (the message says how to install it) or malformed.
    """
    train, test = load_fashion_mnist_raw(path)
    return train.whole(), test.whole()


def load_fashion_mnist_raw(path: str | Path = FASHION_MNIST_DIR) -> tuple[RawImages, RawImages]:
    """:func:`load_fashion_mnist`'s ``(train, test)`` with the pixels kept 8-bit, normalised by
    :meth:`RawImages.subset` as they are taken (the same values bit for bit).

    Raises:
        DataError: as :func:`load_fashion_mnist`.
    """
    folder = Path(path)
    return _load_fashion_split(folder, "train"), _load_fashion_split(folder, "t10k")


def load_digits() -> tuple[ArrayDataset, ArrayDataset]:
    """Load scikit-learn's bundled 8x8 handwritten digits with a fixed stratified split.

    Returns:
        ``(train, test)`` holding 80% and 20% of the 1,797 images, split stratified by class
        with seed ``DIGITS_SPLIT_SEED`` (the same split on every call); inputs ``float32`` of
        shape ``(n, 1, 8, 8)`` scaled from 0..16 to [0, 1]; labels ``int64`` in 0..9.
    """
    import sklearn.datasets  # type: ignore[import-untyped]  # here: importing sklearn takes ~1.5 s
    from sklearn.model_selection import train_test_split  # type: ignore[import-untyped]

    bunch = sklearn.datasets.load_digits()
    images = np.asarray(bunch.images, dtype=np.float32) / 16.0
    labels = np.asarray(bunch.target, dtype=np.int64)
    train_idx, test_idx = train_test_split(
        np.arange(len(labels)),
        test_size=DIGITS_TEST_FRACTION,
        stratify=labels,
        random_state=DIGITS_SPLIT_SEED,
    )
    full = ArrayDataset(x=torch.from_numpy(images).unsqueeze(1), y=torch.from_numpy(labels))
    return full.subset(np.sort(train_idx)), full.subset(np.sort(test_idx))


def _load_fashion_split(folder: Path, prefix: str) -> RawImages:
    """One split (``prefix`` is ``train`` or ``t10k``) of Fashion-MNIST, normalised when taken."""
    images_path = _find_idx(folder, f"{prefix}-images-idx3-ubyte")
    labels_path = _find_idx(folder, f"{prefix}-labels-idx1-ubyte")
    images, labels = read_idx(images_path), read_idx(labels_path)
    side = _FASHION_SIDE_PX
    if images.ndim != 3 or images.shape[1:] != (side, side) or images.dtype != np.uint8:
        raise DataError(
            f"malformed Fashion-MNIST file {images_path}: "
            f"want uint8 (n, 28, 28), got {images.dtype} {images.shape}"
        )
    if labels.shape != (images.shape[0],) or (labels.size and int(labels.max()) >= _NUM_CLASSES):
        raise DataError(
            f"malformed Fashion-MNIST file {labels_path}: "
            f"want {images.shape[0]} labels in 0..9, got shape {labels.shape}"
        )
    return RawImages(torch.from_numpy(images).unsqueeze(1), torch.from_numpy(labels.astype(np.int64)),
                     FASHION_MNIST_MEAN, FASHION_MNIST_STD)


def _find_idx(folder: Path, stem: str) -> Path:
    """The plain or gzipped IDX file named ``stem`` in ``folder``."""
    for candidate in (folder / stem, folder / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    raise DataError(
        f"Fashion-MNIST not found at {folder / stem}[.gz]: install Debian's dataset-fashion-mnist "
        "(apt-get install dataset-fashion-mnist) or set data.path to a folder with the IDX files"
    )
