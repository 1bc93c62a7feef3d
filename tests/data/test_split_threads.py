"""Each device's share taken on threads (``federated.SPLIT_THREADS``) is the one taken one by one."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedfit.data import federated
from fedfit.data.datasets import RawImages


def _one_by_one(pool: RawImages, shares: list[np.ndarray], fraction: float,
                seed: int) -> list[tuple[torch.Tensor, ...]]:
    """The local split written out directly: one stream of permutations in device order, the
    held-out part first, each part sorted, the examples normalised as the whole set would be."""
    whole = pool.whole()
    rng = np.random.default_rng(seed)
    out = []
    for share in shares:
        num_test = min(int(fraction * len(share)), len(share) - 1)
        order = rng.permutation(share)
        train, test = np.sort(order[num_test:]), np.sort(order[:num_test])
        out.append((whole.x[train], whole.y[train], whole.x[test], whole.y[test]))
    return out


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_shares_taken_on_threads_are_those_taken_one_by_one(monkeypatch: pytest.MonkeyPatch,
                                                             threads: int) -> None:
    rng = np.random.default_rng(11)
    pool = RawImages(torch.from_numpy(rng.integers(0, 256, (900, 1, 6, 6), dtype=np.uint8)),
                     torch.from_numpy(rng.integers(0, 10, 900).astype(np.int64)), 0.3, 0.4)
    cuts = np.sort(rng.choice(np.arange(1, 900), 36, replace=False))  # 37 devices of uneven sizes
    shares = np.split(rng.permutation(900), cuts)
    monkeypatch.setattr(federated, "SPLIT_THREADS", threads)
    monkeypatch.setattr(federated, "SPLIT_MIN_SHARE", 0)  # these shares are small: thread them anyway
    got = federated._split_local(pool, shares, 0.25, seed=7)
    want = _one_by_one(pool, shares, 0.25, seed=7)
    assert len(got) == len(want)
    for (train, test), expected in zip(got, want, strict=True):
        for tensor, reference in zip((train.x, train.y, test.x, test.y), expected, strict=True):
            assert torch.equal(tensor, reference)


def test_the_thread_count_is_one_to_four() -> None:
    assert 1 <= federated.SPLIT_THREADS <= 4


def test_small_shares_are_taken_one_by_one_without_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_threads(*args: object, **kwargs: object) -> None:
        raise AssertionError("small shares must not go to threads")

    rng = np.random.default_rng(3)
    pool = RawImages(torch.from_numpy(rng.integers(0, 256, (400, 1, 6, 6), dtype=np.uint8)),
                     torch.from_numpy(rng.integers(0, 10, 400).astype(np.int64)), 0.3, 0.4)
    shares = np.array_split(rng.permutation(400), 40)  # 10 samples each, under SPLIT_MIN_SHARE
    monkeypatch.setattr(federated, "SPLIT_THREADS", 2)
    monkeypatch.setattr(federated, "ThreadPoolExecutor", no_threads)
    got = federated._split_local(pool, shares, 0.25, seed=7)
    assert [len(train.y) + len(test.y) for train, test in got] == [len(share) for share in shares]
