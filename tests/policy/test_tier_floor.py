"""A participation floor per tier: readiness-first selection no longer starves the weak tiers."""

from __future__ import annotations

from collections import Counter

import pytest

from fedfit.policy import ReadinessFirstSelector, UniformSelector
from fedfit.policy.stratified import TierFloorSelector
from tests.policy.test_selection_compute_aware import ready

# 8 phones that can afford batch 32, 2 watches that report batch 1 (deprioritised).
POOL = [ready(i, "phone") for i in range(8)] + [ready(8 + i, "watch", affordable_batch=1) for i in range(2)]


def _watch_seats(selector: TierFloorSelector | ReadinessFirstSelector, draws: int) -> list[int]:
    return [sum(d >= 8 for d in selector.select(POOL, 5, seed=3, draw=k, version=0)) for k in range(draws)]


def test_readiness_first_alone_never_invites_the_watches() -> None:
    assert sum(_watch_seats(ReadinessFirstSelector(UniformSelector(), low=2), 500)) == 0


def test_floor_invites_each_tier_at_its_share_of_the_reserved_seats() -> None:
    selector = TierFloorSelector(ReadinessFirstSelector(UniformSelector(), low=2), floor=0.5)

    seats = _watch_seats(selector, 4000)

    # Reserved R = 0.5 × 5 = 2.5 seats: 2 or 3, each half the time. R = 2: watch share 0.4, won
    # with probability 0.4; R = 3: share 0.6, probability 0.6. E = 0.5·0.4 + 0.5·0.6 = 0.5
    # = floor × size × 2/10; the 3 or so other seats go to phones (readiness first).
    assert max(seats) == 1
    assert sum(seats) / len(seats) == pytest.approx(0.5, abs=0.04)  # ± 5 σ (σ = 0.5/√4000)


def test_full_floor_is_stratified_and_cohorts_stay_whole_and_distinct() -> None:
    pool = [ready(i, "a") for i in range(6)] + [ready(6 + i, "b") for i in range(3)] + [ready(9, "c")]
    selector = TierFloorSelector(UniformSelector(), floor=1.0)
    tiers = Counter()  # type: Counter[str]
    for k in range(2000):
        chosen = selector.select(pool, 5, seed=0, draw=k, version=0)
        assert len(set(chosen)) == 5
        by_tier = Counter("a" if d < 6 else "b" if d < 9 else "c" for d in chosen)
        # shares 3, 1.5, 0.5: tier a always 3 seats, the fifth seat to b or c with odds 1:1
        assert by_tier["a"] == 3 and by_tier["b"] + by_tier["c"] == 2 and by_tier["b"] >= 1
        tiers.update(by_tier)
    assert tiers["c"] / 2000 == pytest.approx(0.5, abs=0.06)


def test_floor_seats_never_go_to_an_offline_device() -> None:
    pool = [ready(i, "phone") for i in range(4)] + [ready(4, "watch", online=False)]
    selector = TierFloorSelector(ReadinessFirstSelector(UniformSelector(), low=2), floor=1.0)

    for k in range(200):
        assert 4 not in selector.select(pool, 4, seed=1, draw=k, version=0)


def test_floor_is_deterministic_from_seed_and_draw() -> None:
    selector = TierFloorSelector(ReadinessFirstSelector(UniformSelector(), low=2), floor=0.3)

    assert [selector.select(POOL, 4, seed=5, draw=k, version=0) for k in range(20)] == \
        [selector.select(POOL, 4, seed=5, draw=k, version=0) for k in range(20)]
