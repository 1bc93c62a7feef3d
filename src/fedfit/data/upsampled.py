"""Fashion-MNIST at an on-device input size: 3×S×S images for the realistic tier catalogue.

The realistic catalogue (:mod:`fedfit.devices.realistic`) is calibrated with MobileNetV2 on
3×96×96 images; no built-in data set has that shape, so this loader draws a seeded subset of
Fashion-MNIST, upsamples each 28×28 image bilinearly to ``side × side`` and repeats it over
three channels. Meant for ``data.loader`` (``fedfit.data.upsampled:load``); the subset is drawn
*before* upsampling, since all 60,000 images at 3×96×96 in float32 would take 6.6 GB.
"""

from __future__ import annotations

from pathlib import Path

import torch

from fedfit.data.datasets import FASHION_MNIST_DIR, ArrayDataset, load_fashion_mnist
from fedfit.errors import DataError

#: Inputs and labels of one set.
Pair = tuple[torch.Tensor, torch.Tensor]


def load(side: int = 96, channels: int = 3, train_samples: int = 2000, test_samples: int = 500,
         path: str | Path = FASHION_MNIST_DIR, seed: int = 0) -> tuple[Pair, Pair]:
    """A seeded subset of Fashion-MNIST upsampled to ``channels × side × side``.

    Args:
        side: output side in pixels (≥ 28).
        channels: copies of the grey channel (3 for RGB models).
        train_samples: training images kept (all when larger than the set).
        test_samples: test images kept (all when larger than the set).
        path: the Fashion-MNIST IDX folder (as ``data.path``).
        seed: seeds the subset.

    Returns:
        ``(train, test)``, each a pair ``(x, y)``: inputs ``float32`` of shape
        ``(n, channels, side, side)``, normalised as :func:`fedfit.data.datasets.load_fashion_mnist`
        does; labels ``int64`` in 0..9.

    Raises:
        DataError: a size below 28 or non-positive, or the files are missing or malformed.
    """
    if side < 28 or channels < 1 or train_samples < 1 or test_samples < 1:
        raise DataError(f"upsampled fashion_mnist: need side >= 28 and positive channels and sample counts, "
                        f"got side={side}, channels={channels}, train={train_samples}, test={test_samples}")
    train, test = load_fashion_mnist(path)
    generator = torch.Generator().manual_seed(seed)
    return (_resize(_subset(train, train_samples, generator), side, channels),
            _resize(_subset(test, test_samples, generator), side, channels))


def _subset(data: ArrayDataset, count: int, generator: torch.Generator) -> ArrayDataset:
    if count >= len(data):
        return data
    return data.subset(torch.randperm(len(data), generator=generator)[:count])


def _resize(data: ArrayDataset, side: int, channels: int) -> Pair:
    x = torch.nn.functional.interpolate(data.x, size=(side, side), mode="bilinear", align_corners=False)
    return x.repeat(1, channels, 1, 1).contiguous(), data.y
