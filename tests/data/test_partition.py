"""Partitioners: exact cover, the skew each one promises, determinism, and clear errors."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedfit.data.partition import dirichlet, iid, shards
from fedfit.errors import DataError


def _balanced_labels(num_classes: int, per_class: int) -> np.ndarray:
    return np.repeat(np.arange(num_classes), per_class)


def _assert_exact_cover(parts: list[np.ndarray], num_samples: int) -> None:
    joined = np.concatenate(parts)
    assert len(joined) == num_samples
    np.testing.assert_array_equal(np.sort(joined), np.arange(num_samples))


def _mean_label_distance(labels: np.ndarray, parts: list[np.ndarray]) -> float:
    """Mean total-variation distance between each device's label mix and the global one."""
    num_classes = int(labels.max()) + 1
    overall = np.bincount(labels, minlength=num_classes) / len(labels)
    local = [np.bincount(labels[part], minlength=num_classes) / len(part) for part in parts]
    return float(np.mean([0.5 * np.abs(mix - overall).sum() for mix in local]))


@settings(max_examples=40, deadline=None)
@given(
    num_samples=st.integers(1, 300), num_devices=st.integers(1, 30), seed=st.integers(0, 2**32 - 1)
)
def test_iid_covers_every_index_once_in_near_equal_parts(
    num_samples: int, num_devices: int, seed: int
) -> None:
    num_devices = min(num_devices, num_samples)

    parts = iid(num_samples, num_devices, seed)

    _assert_exact_cover(parts, num_samples)
    sizes = [len(part) for part in parts]
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=40, deadline=None)
@given(
    labels=st.lists(st.integers(0, 9), min_size=20, max_size=300),
    num_devices=st.integers(1, 20),
    alpha=st.floats(0.01, 100.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_dirichlet_covers_every_index_once_and_fills_every_device(
    labels: list[int], num_devices: int, alpha: float, seed: int
) -> None:
    array = np.array(labels)

    parts = dirichlet(array, num_devices, alpha, seed)

    _assert_exact_cover(parts, len(labels))
    assert min(len(part) for part in parts) >= 1


def test_dirichlet_small_alpha_skews_labels_and_large_alpha_does_not() -> None:
    labels = _balanced_labels(10, 500)

    skewed = _mean_label_distance(labels, dirichlet(labels, 20, 0.05, seed=1))
    uniform = _mean_label_distance(labels, dirichlet(labels, 20, 1000.0, seed=1))

    assert skewed > 0.6
    assert uniform < 0.1


def test_dirichlet_tops_up_devices_to_min_per_device() -> None:
    labels = _balanced_labels(10, 20)

    parts = dirichlet(labels, 50, 0.01, seed=2, min_per_device=3)

    _assert_exact_cover(parts, 200)
    assert min(len(part) for part in parts) >= 3


@pytest.mark.parametrize("alpha", [0.0, -1.0, float("nan"), float("inf")])
def test_dirichlet_rejects_alpha_that_is_not_positive_and_finite(alpha: float) -> None:
    with pytest.raises(DataError, match="alpha"):
        dirichlet(_balanced_labels(2, 5), 2, alpha, seed=0)


def test_shards_give_each_device_at_most_shards_per_device_labels() -> None:
    labels = _balanced_labels(10, 100)

    parts = shards(labels, 10, 2, seed=3)

    _assert_exact_cover(parts, 1000)
    assert all(len(part) == 100 for part in parts)
    assert max(len(np.unique(labels[part])) for part in parts) <= 2


def test_shards_deal_different_labels_to_different_devices() -> None:
    labels = _balanced_labels(10, 100)

    parts = shards(labels, 10, 1, seed=4)

    assert sorted(int(np.unique(labels[part])[0]) for part in parts) == list(range(10))


@pytest.mark.parametrize(
    "split",
    [
        lambda seed: iid(100, 7, seed),
        lambda seed: dirichlet(_balanced_labels(5, 20), 7, 0.3, seed),
        lambda seed: shards(_balanced_labels(5, 20), 7, 2, seed),
    ],
    ids=["iid", "dirichlet", "shards"],
)
def test_same_seed_same_split_other_seed_other_split(
    split: Callable[[int], list[np.ndarray]],
) -> None:
    first, again, other = split(11), split(11), split(12)

    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))


@pytest.mark.parametrize(
    "request_split",
    [
        lambda: iid(3, 4, 0),
        lambda: iid(3, 0, 0),
        lambda: dirichlet(_balanced_labels(2, 3), 4, 1.0, 0, min_per_device=2),
        lambda: shards(_balanced_labels(2, 3), 4, 2, 0),
        lambda: shards(_balanced_labels(2, 3), 2, 0, 0),
        lambda: dirichlet(np.zeros((3, 2), dtype=np.int64), 2, 1.0, 0),
    ],
    ids=[
        "more-devices-than-samples",
        "no-devices",
        "min-too-large",
        "too-few-for-shards",
        "zero-shards",
        "labels-not-1d",
    ],
)
def test_impossible_requests_raise_data_error(request_split: Callable[[], object]) -> None:
    with pytest.raises(DataError):
        request_split()


def test_top_up_takes_from_the_first_largest_device_in_device_order() -> None:
    from fedfit.data.partition import _top_up

    parts = [np.array([], dtype=np.int64), np.arange(10, 15), np.arange(20, 25), np.array([30])]

    after = _top_up(parts, 2, np.random.default_rng(0))

    # device 0 needs 2: device 1 is the first of the two largest (5) and can spare 3 -> sizes 2, 3, 5, 1;
    # device 3 needs 1: device 2 is now the largest -> sizes 2, 3, 4, 2.
    assert [len(p) for p in after] == [2, 3, 4, 2]
    assert set(after[0]) <= set(range(10, 15)) and set(after[3]) - {30} <= set(range(20, 25))
    assert sorted(np.concatenate(after).tolist()) == [*range(10, 15), *range(20, 25), 30]


def test_dirichlet_over_twenty_thousand_devices_covers_and_fills_every_one() -> None:
    labels = np.random.default_rng(0).integers(0, 10, 40_000)

    parts = dirichlet(labels, 20_000, 0.5, seed=0, min_per_device=2)

    _assert_exact_cover(parts, 40_000)
    assert all(len(part) == 2 for part in parts)  # 40,000 samples, 2 each: every device topped up exactly
