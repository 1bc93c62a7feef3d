"""The user's own data: a loader's train and test sets, or data already split per device.

Accepted forms of one data set (``as_array_dataset``): a pair ``(x, y)`` of tensors or NumPy
arrays, an :class:`ArrayDataset`, or any sized torch ``Dataset`` whose items are ``(x, y)``.
Inputs become ``float32`` (integer token ids stay exact below 2**24: a text model casts them
back with ``x.long()``), labels ``int64`` class indices.

A *loader* returns ``(train, test)`` (or a mapping with those keys); fedfit's partitioners split
``train`` over the fleet exactly as for the built-in data sets. *Per-device* data is a mapping
``device id -> data`` (ids ``0..n-1``) or a directory of ``.npz`` files (arrays ``x`` and ``y``),
one per device in file-name order, and an optional ``test.npz`` for the global test set: the
natural partition of a real federated data set.

>>> import torch
>>> train = (torch.rand(40, 3), torch.arange(40) % 4)
>>> data = federate(split_sources(train, (torch.rand(8, 3), torch.arange(8) % 4)), num_devices=2,
...                 partition="iid", seed=0)
>>> data.num_devices, data.num_classes, data.input_shape, sum(len(d) for d in data.train)
(2, 4, (3,), 36)
"""

from __future__ import annotations

from collections.abc import Mapping, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fedfit.data.datasets import ArrayDataset, concatenate
from fedfit.data.federated import FederatedData, _partition_indices, _split_local, _subsample
from fedfit.errors import DataError

#: Largest integer a float32 input holds exactly (token ids above it would be corrupted).
_EXACT_FLOAT32 = 2 ** 24


@dataclass(frozen=True, slots=True)
class Sources:
    """A centralised train set (to partition) or per-device sets, and an optional global test set."""

    train: ArrayDataset | None
    devices: tuple[ArrayDataset, ...]
    test: ArrayDataset | None


def _tensor(value: Any, what: str) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    try:
        return torch.as_tensor(np.asarray(value))
    except (TypeError, ValueError, RuntimeError) as exc:
        raise DataError(f"{what}: not an array ({type(value).__name__}: {exc})") from None


def _from_dataset(data: Any, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(data, Sized) or not hasattr(data, "__getitem__"):
        raise DataError(f"{what}: expected (x, y) arrays, an ArrayDataset or a sized torch Dataset, "
                        f"got {type(data).__name__}")
    items = [data[i] for i in range(len(data))]
    if not items:
        return torch.zeros(0), torch.zeros(0, dtype=torch.int64)
    if not all(isinstance(it, tuple | list) and len(it) == 2 for it in items):
        raise DataError(f"{what}: a Dataset's items must be (x, y) pairs")
    xs = [_tensor(x, what) for x, _ in items]
    if len({tuple(x.shape) for x in xs}) > 1:
        raise DataError(f"{what}: samples have different shapes {sorted({tuple(x.shape) for x in xs})[:2]}")
    return torch.stack(xs), torch.as_tensor([int(_tensor(y, what)) for _, y in items])


def as_array_dataset(data: Any, what: str) -> ArrayDataset:
    """One user data set as an :class:`ArrayDataset`.

    Raises:
        DataError: one line naming ``what``: not array-like, x and y disagree, fractional labels,
            or integer inputs too large for float32.
    """
    if isinstance(data, ArrayDataset):
        return data
    if isinstance(data, tuple | list) and len(data) == 2:
        x, y = _tensor(data[0], what), _tensor(data[1], what)
    else:
        x, y = _from_dataset(data, what)
    if x.dim() < 1 or y.dim() != 1 or len(x) != len(y):
        raise DataError(f"{what}: x {tuple(x.shape)} and y {tuple(y.shape)} disagree (need x (n, ...), y (n,))")
    if y.is_floating_point() and not torch.equal(y, y.round()):
        raise DataError(f"{what}: labels must be class indices, got fractional values")
    if not x.is_floating_point() and len(x) and int(x.abs().max()) > _EXACT_FLOAT32:
        raise DataError(f"{what}: integer inputs above 2**24 do not survive float32")
    return ArrayDataset(x.to(torch.float32), y.to(torch.int64))


def split_sources(train: Any, test: Any | None) -> Sources:
    """A centralised train set for fedfit's partitioners, and the global test set."""
    return Sources(as_array_dataset(train, "data.train"), (),
                   None if test is None else as_array_dataset(test, "data.test"))


def device_sources(devices: Mapping[Any, Any], test: Any | None = None) -> Sources:
    """Per-device data keyed ``0..n-1`` (the natural partition), and an optional global test set.

    Raises:
        DataError: ids that are not ``0..n-1``, or a device with no sample.
    """
    ids = sorted(devices, key=str)
    if not ids or sorted(ids, key=lambda d: int(d) if str(d).isdigit() else -1) != list(range(len(ids))):
        raise DataError(f"data: per-device keys must be the device ids 0..{max(len(ids) - 1, 0)}, got {ids[:5]}")
    sets = tuple(as_array_dataset(devices[i], f"data device {i}") for i in range(len(ids)))
    for i, d in enumerate(sets):
        if len(d) == 0:
            raise DataError(f"data device {i}: has no samples")
    return Sources(None, sets, None if test is None else as_array_dataset(test, "data.test"))


def npz_sources(folder: str | Path) -> Sources:
    """Per-device ``.npz`` files (arrays ``x``, ``y``) in name order; ``test.npz`` is the global test.

    Raises:
        DataError: a missing folder, no device file, or a file without ``x`` and ``y``.
    """
    root = Path(folder)
    if not root.is_dir():
        raise DataError(f"data.devices_dir: no such directory: {root}")
    files = sorted(p for p in root.glob("*.npz") if p.name != "test.npz")
    if not files:
        raise DataError(f"data.devices_dir: no per-device .npz file in {root}")
    test = root / "test.npz"
    return device_sources({i: _npz(p) for i, p in enumerate(files)}, _npz(test) if test.is_file() else None)


def _npz(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        with np.load(path) as arrays:
            return arrays["x"], arrays["y"]
    except KeyError:
        raise DataError(f"{path}: needs arrays 'x' and 'y'") from None
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not a readable .npz file ({exc})") from None


def federate(sources: Sources, *, num_devices: int, partition: str, seed: int, dirichlet_alpha: float = 0.5,
             shards_per_device: int = 2, max_train_samples: int | None = None,
             max_test_samples: int | None = None, local_test_fraction: float = 0.1,
             num_classes: int | None = None) -> FederatedData:
    """Split ``sources`` over ``num_devices`` devices, as :func:`~fedfit.data.build_federated_data`.

    A centralised train set is subsampled to ``max_train_samples`` and partitioned (``iid``,
    ``dirichlet`` or ``shards``); per-device data keeps its own split (``partition`` is not used).
    Each device then holds out ``local_test_fraction`` locally. The global test set is the
    user's, else every device's held-out data.

    Args:
        num_classes: classes of the task; ``None``: the largest label + 1.

    Raises:
        DataError: one line for a device count that does not match, an empty device, input
            shapes that differ, labels out of range, or no test data at all.
    """
    subs = [int(s) for s in np.random.SeedSequence(seed).generate_state(4)]
    local = _local_splits(sources, num_devices, partition, subs, dirichlet_alpha, shards_per_device,
                          max_train_samples, local_test_fraction)
    train, held = [t for t, _ in local], [h for _, h in local]
    given = [(f"data device {i}", d) for i, d in enumerate(train)]
    if sources.test is not None:
        given.append(("data.test", sources.test))
    shape = tuple(train[0].x.shape[1:])
    classes = num_classes if num_classes is not None else 1 + max(int(d.y.max()) for _, d in given if len(d))
    for what, d in given:
        _check_set(what, d, shape, classes)
    test = sources.test if sources.test is not None else concatenate(held)
    if len(test) == 0:
        raise DataError("data.test: no test set given and no device holds data out (local_test_fraction is 0)")
    return FederatedData(tuple(train), tuple(held), _subsample(test, max_test_samples, subs[3]), classes, shape)


def _local_splits(sources: Sources, num_devices: int, partition: str, subs: list[int], alpha: float,
                  shards: int, max_train: int | None, fraction: float) -> list[tuple[ArrayDataset, ArrayDataset]]:
    if sources.train is None:
        if len(sources.devices) != num_devices:
            raise DataError(f"data: {len(sources.devices)} devices' data for a fleet of {num_devices} devices "
                            "(fleet.tiers must count as many)")
        return [_split_local(d, [np.arange(len(d))], fraction, subs[2] + i)[0] for i, d in enumerate(sources.devices)]
    if partition == "natural":
        raise DataError("data.partition: 'natural' needs per-device data (data.devices_dir, or a mapping in Python)")
    if len(sources.train) == 0:
        raise DataError("data.train: has no samples")
    pool = _subsample(sources.train, max_train, subs[0])
    shares = _partition_indices(pool, partition, num_devices, subs[1], dirichlet_alpha=alpha, shards_per_device=shards)
    for i, share in enumerate(shares):
        if len(share) == 0:
            raise DataError(f"data device {i}: gets no sample under partition '{partition}' "
                            f"({len(pool)} samples over {num_devices} devices)")
    return _split_local(pool, shares, fraction, subs[2])


def _check_set(what: str, d: ArrayDataset, shape: tuple[int, ...], classes: int) -> None:
    if len(d) == 0:
        if what != "data.test":
            raise DataError(f"{what}: has no training samples")
        return
    if tuple(d.x.shape[1:]) != shape:
        raise DataError(f"{what}: input shape {tuple(d.x.shape[1:])} differs from device 0's {shape}")
    low, high = int(d.y.min()), int(d.y.max())
    if low < 0 or high >= classes:
        raise DataError(f"{what}: label {low if low < 0 else high} out of range 0..{classes - 1}")
