"""A data set split across devices: ``FederatedData`` and its builder.

>>> data = build_federated_data(dataset="digits", num_devices=4, partition="iid", seed=0)
>>> len(data.train), data.num_classes, data.input_shape
(4, 10, (1, 8, 8))
>>> sum(len(d) for d in data.train) + sum(len(d) for d in data.test), len(data.global_test)
(1437, 360)
"""

from __future__ import annotations

import dataclasses

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import overload
from dataclasses import dataclass

import numpy as np

from fedfit.data import partition as partitioners
from fedfit.data.datasets import ArrayDataset, RawImages, concatenate, load_digits, load_fashion_mnist_raw
from fedfit.data.synthetic import NUM_CLASSES as SYNTHETIC_CLASSES
from fedfit.data.synthetic import NUM_FEATURES as SYNTHETIC_FEATURES
from fedfit.data.synthetic import TRAIN_FRACTION as SYNTHETIC_TRAIN_FRACTION
from fedfit.data.synthetic import synthetic_federated
from fedfit.data.vibration import NUM_CLASSES as VIBRATION_CLASSES
from fedfit.data.vibration import WINDOW as VIBRATION_WINDOW
from fedfit.data.vibration import load_vibration
from fedfit.errors import DataError

DATASETS = ("fashion_mnist", "digits", "synthetic", "vibration")
PARTITIONS = ("iid", "dirichlet", "shards", "natural")
#: Threads taking the devices' shares out of the pool (:func:`_split_local`): the gathers and
#: float conversions release the interpreter lock, and most of their time is the kernel mapping
#: the copies' fresh pages, so on a free core two halve it. Each share is the same either way.
SPLIT_THREADS = max(1, min(4, os.cpu_count() or 1))
#: Threads only where the copies dominate: shares of at least this many samples on average
#: (Fashion-MNIST over 1,000 devices built in 0.40 s one by one, 0.50 s on two threads).
SPLIT_MIN_SHARE = 256
_NUM_CLASSES: dict[str, int] = {"fashion_mnist": 10, "digits": 10, "synthetic": SYNTHETIC_CLASSES,
                                 "vibration": VIBRATION_CLASSES}
_INPUT_SHAPES: dict[str, tuple[int, ...]] = {
    "fashion_mnist": (1, 28, 28),
    "digits": (1, 8, 8),
    "synthetic": (SYNTHETIC_FEATURES,),
    "vibration": (1, VIBRATION_WINDOW),
}


@dataclass(frozen=True, slots=True)
class FederatedData:
    """Per-device train and held-out data, plus one global test set.

    Attributes:
        train: Each device's training data, indexed by device id.
        test: Each device's local held-out data (possibly empty), indexed by device id.
        global_test: The test set for the global model.
        num_classes: Number of classes; labels lie in ``0..num_classes - 1``.
        input_shape: Shape of one input, without the batch dimension.
    """

    train: tuple[ArrayDataset, ...]
    test: tuple[ArrayDataset, ...]
    global_test: ArrayDataset
    num_classes: int
    input_shape: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.train) != len(self.test) or not self.train:
            raise DataError(
                f"FederatedData needs one train and one test set per device, "
                f"got {len(self.train)} and {len(self.test)}"
            )

    @property
    def num_devices(self) -> int:
        """Number of devices."""
        return len(self.train)


def build_federated_data(
    *,
    dataset: str,
    num_devices: int,
    partition: str,
    seed: int,
    path: str | None = None,
    dirichlet_alpha: float = 0.5,
    shards_per_device: int = 2,
    synthetic_alpha: float = 1.0,
    synthetic_beta: float = 1.0,
    synthetic_iid: bool = False,
    max_train_samples: int | None = None,
    max_test_samples: int | None = None,
    local_test_fraction: float = 0.1,
    pool: int | None = None,
) -> FederatedData:
    """Load or generate a data set and split it across ``num_devices`` devices.

    For ``fashion_mnist`` and ``digits``: the official training set, subsampled to
    ``max_train_samples`` if given, is partitioned (``iid``, ``dirichlet`` or ``shards``) and
    each device's share is split into local train and test, ``local_test_fraction`` of it
    (rounded down) held out but at least one sample kept for training; ``global_test`` is the
    official test set, subsampled to ``max_test_samples`` if given.

    For ``synthetic`` (FedProx's Synthetic(alpha, beta), see ``fedfit.data.synthetic``) the
    only partition is ``natural``: each device's data comes from its own generator, split
    90/10 as in the recipe (``local_test_fraction`` is not used). ``max_train_samples``, if
    given, caps each device at ``ceil((max_train_samples // num_devices) / 0.9)`` generated
    samples so the training sets together hold at most ``max_train_samples``.
    ``global_test`` is all devices' held-out data, subsampled to ``max_test_samples`` if given.

    Args:
        dataset: One of ``DATASETS``.
        num_devices: Devices to split over.
        partition: One of ``PARTITIONS``; ``natural`` only for ``synthetic`` and vice versa.
        seed: Seed of every random choice; the same arguments give the same data.
        path: Folder of the Fashion-MNIST IDX files; ``None`` means ``FASHION_MNIST_DIR``.
            Ignored by the other data sets.
        dirichlet_alpha: Concentration of the ``dirichlet`` partition (> 0).
        shards_per_device: Shards each device gets under ``shards``.
        synthetic_alpha: Spread of the device models in ``synthetic``.
        synthetic_beta: Spread of the device inputs in ``synthetic``.
        synthetic_iid: Generate the IID variant of ``synthetic``.
        max_train_samples: Cap on training samples in all; ``None`` keeps them all.
        max_test_samples: Cap on ``global_test``; ``None`` keeps it whole.
        local_test_fraction: Share of each device's data held out locally, in [0, 1).
        pool: Distinct device data sets for a fleet bigger than the data: the data are built
            for ``pool`` devices as above and device ``d`` gets set ``d mod pool`` (repeated
            shards: devices ``d`` and ``d + pool`` hold the same samples, held once in
            memory). ``None``: every device its own set.

    Returns:
        The federated data.

    Raises:
        DataError: An unknown name, an impossible request, or missing or malformed files.
    """
    if pool is not None and pool < num_devices:
        if pool < 1:
            raise DataError(f"pool must be >= 1, got {pool}")
        shared = build_federated_data(
            dataset=dataset, num_devices=pool, partition=partition, seed=seed, path=path,
            dirichlet_alpha=dirichlet_alpha, shards_per_device=shards_per_device,
            synthetic_alpha=synthetic_alpha, synthetic_beta=synthetic_beta, synthetic_iid=synthetic_iid,
            max_train_samples=max_train_samples, max_test_samples=max_test_samples,
            local_test_fraction=local_test_fraction)
        return dataclasses.replace(shared, train=tuple(shared.train[d % pool] for d in range(num_devices)),
                                   test=tuple(shared.test[d % pool] for d in range(num_devices)))
    _check_choice("dataset", dataset, DATASETS)
    _check_choice("partition", partition, PARTITIONS)
    _check_limits(seed, max_train_samples, max_test_samples, local_test_fraction)
    if (dataset == "synthetic") != (partition == "natural"):
        raise DataError(
            f"partition {partition!r} does not fit dataset {dataset!r}: synthetic takes only "
            "'natural'; fashion_mnist and digits take iid, dirichlet or shards"
        )
    sub_seeds = [int(s) for s in np.random.SeedSequence(seed).generate_state(4)]
    if dataset == "synthetic":
        cap = _synthetic_cap(max_train_samples, num_devices)
        train, test = synthetic_federated(
            num_devices, synthetic_alpha, synthetic_beta,
            iid=synthetic_iid, seed=sub_seeds[0], max_samples_per_device=cap,
        )
        global_test = _subsample(concatenate(test), max_test_samples, sub_seeds[3])
        return _assemble(dataset, train, test, global_test)
    full_train, full_test = _load_centralised(dataset, path)
    samples = _subsample(full_train, max_train_samples, sub_seeds[0])
    if num_devices > len(samples):
        raise DataError(f"{num_devices} device data sets but {len(samples)} {dataset} training samples: "
                        f"set data.pool (at most {len(samples)}) to share data sets between devices")
    shares = _partition_indices(
        samples, partition, num_devices, sub_seeds[1],
        dirichlet_alpha=dirichlet_alpha, shards_per_device=shards_per_device,
    )
    local = _split_local(samples, shares, local_test_fraction, sub_seeds[2])
    test_pool = _subsample(full_test, max_test_samples, sub_seeds[3])
    global_test = test_pool.whole() if isinstance(test_pool, RawImages) else test_pool
    return _assemble(dataset, [t for t, _ in local], [h for _, h in local], global_test)


def _assemble(
    dataset: str, train: list[ArrayDataset], test: list[ArrayDataset], global_test: ArrayDataset
) -> FederatedData:
    """Wrap per-device sets and the global test set with the data set's metadata."""
    return FederatedData(
        train=tuple(train),
        test=tuple(test),
        global_test=global_test,
        num_classes=_NUM_CLASSES[dataset],
        input_shape=_INPUT_SHAPES[dataset],
    )


#: A centralised data set before partitioning: Fashion-MNIST keeps its 8-bit pixels until each
#: device's share is taken (normalised then, bit for bit as the whole set would be).
Pool = ArrayDataset | RawImages


def _load_centralised(dataset: str, path: str | None) -> tuple[Pool, Pool]:
    """The official (train, test) split of an image data set."""
    if dataset == "digits":
        return load_digits()
    if dataset == "vibration":
        return load_vibration()
    return load_fashion_mnist_raw() if path is None else load_fashion_mnist_raw(path)


def _partition_indices(
    pool: Pool,
    partition: str,
    num_devices: int,
    seed: int,
    *,
    dirichlet_alpha: float,
    shards_per_device: int,
) -> list[np.ndarray]:
    """Index arrays into ``pool``, one per device, from the named partitioner."""
    labels = pool.y.numpy()
    if partition == "iid":
        return partitioners.iid(len(pool), num_devices, seed)
    if partition == "dirichlet":
        return partitioners.dirichlet(labels, num_devices, dirichlet_alpha, seed)
    return partitioners.shards(labels, num_devices, shards_per_device, seed)


def _split_local(
    pool: Pool, shares: list[np.ndarray], fraction: float, seed: int
) -> list[tuple[ArrayDataset, ArrayDataset]]:
    """Each device's share as (train, held-out): ``fraction`` held out, one train sample kept."""
    rng = np.random.default_rng(seed)
    cuts = []  # drawn in device order, one stream; only the copies are taken on threads
    for share in shares:
        num_test = min(int(fraction * len(share)), len(share) - 1)
        order = rng.permutation(share)
        cuts.append((np.sort(order[num_test:]), np.sort(order[:num_test])))

    def take(cut: tuple[np.ndarray, np.ndarray]) -> tuple[ArrayDataset, ArrayDataset]:
        return pool.subset(cut[0]), pool.subset(cut[1])

    def take_all(part: list[tuple[np.ndarray, np.ndarray]]) -> list[tuple[ArrayDataset, ArrayDataset]]:
        return [take(cut) for cut in part]

    if SPLIT_THREADS == 1 or len(cuts) < 2 or sum(map(len, shares)) < SPLIT_MIN_SHARE * len(cuts):
        return take_all(cuts)  # small shares: each one's Python outweighs its copy, threads contend
    # one contiguous run of devices per thread: a task per device costs more than a tiny share's copy
    size = -(-len(cuts) // SPLIT_THREADS)
    with ThreadPoolExecutor(SPLIT_THREADS, thread_name_prefix="fedfit-data") as threads:
        parts = threads.map(take_all, [cuts[i:i + size] for i in range(0, len(cuts), size)])
        return [split for part in parts for split in part]


@overload
def _subsample(data: ArrayDataset, max_samples: int | None, seed: int) -> ArrayDataset: ...


@overload
def _subsample(data: Pool, max_samples: int | None, seed: int) -> Pool: ...


def _subsample(data: Pool, max_samples: int | None, seed: int) -> Pool:
    """At most ``max_samples`` examples of ``data``, chosen at random, in original order."""
    if max_samples is None or max_samples >= len(data):
        return data
    chosen = np.random.default_rng(seed).choice(len(data), size=max_samples, replace=False)
    return data.subset(np.sort(chosen))


def _synthetic_cap(max_train_samples: int | None, num_devices: int) -> int | None:
    """Samples each synthetic device may generate so training stays within the cap."""
    if max_train_samples is None:
        return None
    per_device = max_train_samples // max(num_devices, 1)
    if per_device < 1:
        raise DataError(
            f"max_train_samples={max_train_samples} leaves no training sample "
            f"for each of {num_devices} devices (raise it, or set data.pool to share data sets)"
        )
    return max(2, math.ceil(per_device / SYNTHETIC_TRAIN_FRACTION))


def _check_choice(key: str, value: str, valid: tuple[str, ...]) -> None:
    """Raise ``DataError`` naming the valid options unless ``value`` is one of them."""
    if value not in valid:
        raise DataError(f"unknown {key} {value!r}: choose one of {', '.join(valid)}")


def _check_limits(seed: int, max_train: int | None, max_test: int | None, fraction: float) -> None:
    """Raise ``DataError`` for a negative seed, a cap below 1, or a fraction outside [0, 1)."""
    if seed < 0:
        raise DataError(f"data seed must be >= 0, got {seed}")
    for key, cap in (("max_train_samples", max_train), ("max_test_samples", max_test)):
        if cap is not None and cap < 1:
            raise DataError(f"{key} must be >= 1 or unset, got {cap}")
    if not 0.0 <= fraction < 1.0:
        raise DataError(f"local_test_fraction must lie in [0, 1), got {fraction}")
