"""Split one data set's indices across devices: IID, Dirichlet label skew, label shards.

Each partitioner is a pure function of its arguments: the same seed gives the same split.
It returns one ``int64`` index array per device, sorted ascending; together they cover every
index exactly once.

- ``iid``: a random, near-equal split.
- ``dirichlet``: label skew after Hsu, Qi and Brown, "Measuring the Effects of Non-Identical
  Data Distribution for Federated Visual Classification" (arXiv:1909.06335, 2019): each class
  is spread over the devices in proportions drawn from ``Dir(alpha)``.
- ``shards``: McMahan et al., "Communication-Efficient Learning of Deep Networks from
  Decentralized Data", AISTATS 2017: sort by label, cut into shards, deal each device a few.

>>> [part.tolist() for part in iid(5, 2, seed=0)]
[[2, 3, 4], [0, 1]]
"""

from __future__ import annotations

import heapq

import numpy as np

from fedfit.errors import DataError


def iid(num_samples: int, num_devices: int, seed: int) -> list[np.ndarray]:
    """Shuffle the indices and split them into near-equal parts.

    Args:
        num_samples: Size of the data set.
        num_devices: Parts to make; device sizes differ by at most one.
        seed: Seed of the shuffle.

    Returns:
        One sorted index array per device.

    Raises:
        DataError: Fewer samples than devices, or no devices.
    """
    _check_counts(num_samples, num_devices, per_device=1)
    order = np.random.default_rng(seed).permutation(num_samples)
    return [np.sort(part) for part in np.array_split(order, num_devices)]


def dirichlet(
    labels: np.ndarray, num_devices: int, alpha: float, seed: int, min_per_device: int = 1
) -> list[np.ndarray]:
    """Spread each class over the devices in proportions drawn from ``Dir(alpha)``.

    Small ``alpha`` (0.1) gives each device a few dominant classes; large ``alpha`` (100)
    approaches an IID split. Devices left with fewer than ``min_per_device`` samples are
    then topped up, one device at a time, with samples drawn at random from whichever
    device is largest at that moment. Moving samples, rather than redrawing until every
    device is large enough, always terminates and barely changes the skew.

    Args:
        labels: Class of each sample, shape ``(n,)``, integers.
        num_devices: Devices to split over.
        alpha: Concentration of the Dirichlet prior, > 0.
        seed: Seed of the shuffles and draws.
        min_per_device: Fewest samples any device ends with.

    Returns:
        One sorted index array per device.

    Raises:
        DataError: ``alpha <= 0``, or fewer than ``num_devices * min_per_device`` samples.
    """
    labels = _check_labels(labels)
    if not alpha > 0 or not np.isfinite(alpha):
        raise DataError(f"dirichlet partition needs a finite alpha > 0, got alpha={alpha}")
    if min_per_device < 0:
        raise DataError(f"dirichlet partition needs min_per_device >= 0, got {min_per_device}")
    _check_counts(len(labels), num_devices, per_device=min_per_device)
    rng = np.random.default_rng(seed)
    samples, owners = [], []
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        proportions = rng.dirichlet(np.full(num_devices, alpha))
        cuts = (np.cumsum(proportions)[:-1] * len(members)).astype(np.int64)
        samples.append(members)  # the i-th member goes to the device whose cut range holds i
        owners.append(np.searchsorted(cuts, np.arange(len(members)), side="right"))
    merged = _group(np.concatenate(samples).astype(np.int64), np.concatenate(owners), num_devices)
    return [np.sort(part) for part in _top_up(merged, min_per_device, rng)]


def _group(samples: np.ndarray, owners: np.ndarray, num_devices: int) -> list[np.ndarray]:
    """``samples`` split by owner, each device's in their order in ``samples`` (linear-time
    counting sort, where one ``np.split`` per class and device would cost classes × devices)."""
    order = np.argsort(owners, kind="stable")
    return np.split(samples[order], np.cumsum(np.bincount(owners, minlength=num_devices))[:-1])


def shards(
    labels: np.ndarray, num_devices: int, shards_per_device: int, seed: int
) -> list[np.ndarray]:
    """Sort by label, cut into ``num_devices * shards_per_device`` shards, deal them at random.

    Within a class the order is shuffled first, so which samples of a class share a shard is
    random too. Shards differ in size by at most one. When each class's size is a multiple
    of the shard size, every shard holds one class and a device at most
    ``shards_per_device`` classes.

    Args:
        labels: Class of each sample, shape ``(n,)``, integers.
        num_devices: Devices to split over.
        shards_per_device: Shards each device gets (McMahan et al. use 2).
        seed: Seed of the shuffles.

    Returns:
        One sorted index array per device.

    Raises:
        DataError: ``shards_per_device < 1``, or fewer samples than shards.
    """
    labels = _check_labels(labels)
    if shards_per_device < 1:
        raise DataError(f"shards partition needs shards_per_device >= 1, got {shards_per_device}")
    _check_counts(len(labels), num_devices, per_device=shards_per_device)
    rng = np.random.default_rng(seed)
    shuffled = rng.permutation(len(labels))
    by_label = shuffled[np.argsort(labels[shuffled], kind="stable")]
    pieces = np.array_split(by_label, num_devices * shards_per_device)
    dealt = rng.permutation(len(pieces)).reshape(num_devices, shards_per_device)
    return [np.sort(np.concatenate([pieces[i] for i in row])).astype(np.int64) for row in dealt]


def _top_up(
    parts: list[np.ndarray], min_per_device: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """Move random samples from the largest device (the first, among equals) to each device
    below ``min_per_device``, in device order. The largest is kept in a heap, so the cost is
    ``O(log n)`` plus the donor's size per move rather than a scan of every device."""
    parts = list(parts)
    largest = [(-len(part), device) for device, part in enumerate(parts)]
    heapq.heapify(largest)
    for device in range(len(parts)):
        while len(parts[device]) < min_per_device:
            while -largest[0][0] != len(parts[largest[0][1]]):  # a stale size: drop it
                heapq.heappop(largest)
            donor = largest[0][1]
            movable = min(min_per_device - len(parts[device]), len(parts[donor]) - min_per_device)
            taken = rng.choice(len(parts[donor]), size=movable, replace=False)
            parts[device] = np.concatenate([parts[device], parts[donor][taken]])
            parts[donor] = np.delete(parts[donor], taken)
            for changed in (device, donor):
                heapq.heappush(largest, (-len(parts[changed]), changed))
    return parts


def _check_labels(labels: np.ndarray) -> np.ndarray:
    """``labels`` as a 1-D integer array, or ``DataError``."""
    array = np.asarray(labels)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise DataError(
            f"partition needs 1-D integer labels, got {array.dtype} of shape {array.shape}"
        )
    return array


def _check_counts(num_samples: int, num_devices: int, per_device: int) -> None:
    """Raise ``DataError`` unless ``num_samples`` can give each device ``per_device`` samples."""
    if num_devices < 1:
        raise DataError(f"partition needs at least 1 device, got num_devices={num_devices}")
    if num_samples < num_devices * per_device:
        raise DataError(
            f"cannot give {num_devices} devices {per_device} sample(s) each "
            f"from {num_samples} samples"
        )
