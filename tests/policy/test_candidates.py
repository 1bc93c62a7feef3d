"""Candidate sampling: distinct idle devices, uniform, deterministic from (seed, draw)."""

from collections import Counter

import pytest

from fedfit.policy.candidates import compact_ids, sample_idle

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


def test_ids_0_to_n_are_drawn_from_a_range_with_the_same_candidates() -> None:
    busy = set(range(0, 10_000, 7))

    assert compact_ids(IDS) == range(10_000)
    for draw in range(5):
        assert sample_idle(compact_ids(IDS), busy.__contains__, 300, seed=2, draw=draw) == \
            sample_idle(IDS, busy.__contains__, 300, seed=2, draw=draw)
    for ids in ([0, 2, 1], [1, 2, 3], [0, 1, 1]):  # not exactly 0..n-1: kept as given
        assert compact_ids(ids) is ids
