"""Compute-aware selection: deferral, tier strata, Oort guidance, determinism from (seed, round)."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from fedfit.policy import (
    Deferral, DeferringSelector, OortSelector, Readiness, StratifiedSelector, UniformSelector, tier_quotas,
)
from fedfit.types import Thermal


def ready(device: int, tier: str = "a", **kw: object) -> Readiness:
    base: dict[str, object] = {"affordable_batch": 32, "planned_batch": 8, "predicted_duration_s": 1.0,
                               "battery_fraction": 0.9, "charging": False, "thermal": Thermal.NOMINAL,
                               "online": True}
    return Readiness(device, tier, **(base | kw))  # type: ignore[arg-type]


@pytest.mark.parametrize(("kw", "deferred"), [
    ({}, False), ({"online": False}, True), ({"battery_fraction": 0.1}, True),
    ({"battery_fraction": 0.1, "charging": True}, False), ({"thermal": Thermal.HOT}, True),
    ({"affordable_batch": 4}, True), ({"predicted_duration_s": 50.0}, True),
    ({"predicted_duration_s": math.inf}, True), ({"battery_fraction": None}, False),
])
def test_deferral_rules(kw: dict[str, object], deferred: bool) -> None:
    assert Deferral(min_battery=0.2, max_duration_s=30.0).defers(ready(0, **kw)) is deferred


def test_deferring_selector_never_picks_a_deferred_device() -> None:
    pool = [ready(i, online=i % 2 == 0) for i in range(10)]

    chosen = DeferringSelector(UniformSelector()).select(pool, 10, seed=1, draw=0, version=0)

    assert sorted(chosen) == [0, 2, 4, 6, 8]


def test_tier_quotas_are_proportional_and_sum_to_size() -> None:
    assert tier_quotas({"a": 10, "b": 10, "c": 5}, 10) == {"a": 4, "b": 4, "c": 2}
    assert tier_quotas({"a": 1, "b": 1}, 5) == {"a": 1, "b": 1}


def test_stratified_selection_seats_every_tier_and_is_deterministic() -> None:
    pool = [ready(i, "strong") for i in range(20)] + [ready(20 + i, "weak") for i in range(5)]
    sel = StratifiedSelector()

    first = sel.select(pool, 5, seed=3, draw=7, version=7)

    tiers = Counter("weak" if d >= 20 else "strong" for d in first)
    assert tiers == {"strong": 4, "weak": 1}
    assert sel.select(list(reversed(pool)), 5, seed=3, draw=7, version=7) == first
    assert any(sel.select(pool, 5, seed=3, draw=r, version=r) != first for r in range(8, 12))


def test_oort_explores_unseen_devices_and_exploits_high_utility() -> None:
    explored = [ready(i, statistical_utility=100.0 if i == 3 else 1.0, last_round=1) for i in range(6)]
    fresh = [ready(10 + i) for i in range(4)]
    sel = OortSelector(exploration=0.5, cutoff=0.95)

    chosen = sel.select(explored + fresh, 2, seed=0, draw=2, version=2)

    assert 3 in chosen  # the only device within 95% of the cut-off utility
    assert len([d for d in chosen if d >= 10]) == 1  # half the seats explore


def test_oort_penalises_devices_slower_than_the_preferred_duration() -> None:
    pool = [ready(0, statistical_utility=10.0, last_round=1, predicted_duration_s=100.0),
            ready(1, statistical_utility=5.0, last_round=1, predicted_duration_s=1.0)]
    sel = OortSelector(exploration=0.0, penalty=2.0, preferred_duration_s=10.0)

    # utility of 0 falls to (10 + ε)·(10/100)² ≈ 0.1, below device 1's 5 + ε
    assert sel.select(pool, 1, seed=0, draw=1, version=1) == [1]


def test_drawn_remainder_seats_give_small_tiers_their_share_on_average() -> None:
    import numpy as np

    counts = {"phone": 24, "sensor": 2, "watch": 4}
    seats = {t: 0 for t in counts}
    draws = 3000
    for r in range(draws):
        for tier, n in tier_quotas(counts, 1, np.random.default_rng([0, r])).items():
            seats[tier] += n
    for tier, n in counts.items():  # one seat a draw: a tier's expected share is n / 30
        assert abs(seats[tier] / draws - n / 30) < 0.03
    assert tier_quotas(counts, 1) == {"phone": 0, "sensor": 0, "watch": 0} | {"phone": 1}
