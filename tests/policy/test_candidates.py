"""Candidate sampling: distinct idle devices, uniform, deterministic from (seed, draw)."""

from collections import Counter

import numpy as np
import pytest

from fedfit.policy.candidates import sample_idle

IDS = list(range(10_000))


def test_same_seed_and_draw_give_the_same_candidates() -> None:
    first = sample_idle(IDS, lambda d: False, 50, seed=3, draw=7)

    assert first == sample_idle(IDS, lambda d: False, 50, seed=3, draw=7)
    assert first != sample_idle(IDS, lambda d: False, 50, seed=3, draw=8)


def test_candidates_are_distinct_idle_and_sorted() -> None:
    busy = set(range(0, 10_000, 3))

    chosen = sample_idle(IDS, busy.__contains__, 500, seed=0, draw=0)

    assert len(chosen) == len(set(chosen)) == 500
    assert not busy & set(chosen) and chosen == sorted(chosen)


def test_a_mostly_busy_fleet_still_yields_every_idle_device_wanted() -> None:
    idle = {5, 77, 4242}

    assert sample_idle(IDS, lambda d: d not in idle, 10, seed=0, draw=0) == [5, 77, 4242]
    assert len(sample_idle(IDS, lambda d: d % 100 != 0, 50, seed=0, draw=1)) == 50  # 100 idle of 10,000


def test_every_idle_device_is_equally_likely() -> None:
    ids = list(range(20))
    counts = Counter(d for draw in range(2000) for d in sample_idle(ids, lambda d: d >= 10, 5, seed=1, draw=draw))

    # 5 of the 10 idle devices per draw: each is drawn with probability 1/2, 1000 times in 2000.
    assert set(counts) == set(range(10))
    assert all(c == pytest.approx(1000, abs=100) for c in counts.values())


def _one_by_one(ids: list[int], busy: set[int], count: int, seed: int, draw: int) -> list[int]:
    """The sampler as first written: each draw tested in turn (the reference)."""
    rng = np.random.default_rng([seed, draw, 0xCA4D])
    chosen: dict[int, None] = {}
    for _ in range(4):
        need = count - len(chosen)
        if need <= 0:
            break
        for i in rng.integers(0, len(ids), size=2 * need + 8).tolist():
            if ids[i] not in chosen and ids[i] not in busy:
                chosen[ids[i]] = None
                if len(chosen) == count:
                    break
    if len(chosen) < count:
        idle = [d for d in ids if d not in busy]
        if len(idle) <= count:
            return idle
        chosen = dict.fromkeys(idle[i] for i in rng.choice(len(idle), size=count, replace=False).tolist())
    return sorted(chosen)


def test_the_vectorised_sampler_equals_testing_each_draw_in_turn() -> None:
    rng = np.random.default_rng(7)
    for case in range(60):
        n = int(rng.integers(1, 3000))
        ids = sorted(rng.choice(10 * n, n, replace=False).tolist())  # ids need not be 0..n-1
        busy = set(rng.choice(ids, int(n * rng.choice([0.0, 0.1, 0.5, 0.9, 0.99])), replace=False).tolist())
        count = int(rng.integers(1, n + 5))
        assert sample_idle(ids, busy.__contains__, count, seed=case, draw=3) == _one_by_one(ids, busy, count, case, 3)
