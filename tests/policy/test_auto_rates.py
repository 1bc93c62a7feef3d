"""Sync-vs-FedBuff update rates (auto's rule 5) against hand-computed cases."""

from __future__ import annotations

import heapq
import math

import pytest

from fedfit.policy.auto_rates import (
    MAX_STALENESS, async_rate, binomial_below, expected_kept, expected_round_s, label_skew, polynomial, prefers_async,
    sync_rate, valued, version_interval,
)


def test_binomial_pieces() -> None:
    assert binomial_below(3, 0.75, 2) == pytest.approx(10 / 64)  # P0 + P1 = 1/64 + 9/64
    assert expected_kept(3, 0.75, 2) == pytest.approx(117 / 64)  # 1 × 9/64 + 2 × 54/64
    assert expected_kept(2, 1.0, 5) == pytest.approx(2.0)


def test_round_length_is_the_kth_order_statistic_capped_by_the_deadline() -> None:
    # 2nd smallest of 3 draws of (1, 2, 3): P(> t) = 1 on [0, 1), 20/27 on [1, 2), 7/27 on [2, 3)
    assert expected_round_s([1.0, 2.0, 3.0], 3, 2, math.inf) == pytest.approx(2.0)
    assert expected_round_s([1.0, 2.0, 3.0], 3, 2, 1.5) == pytest.approx(1 + 0.5 * 20 / 27)


def test_sync_rate() -> None:
    assert sync_rate([1.0, 3.0], 1, 0.0, None) == pytest.approx(0.5)  # one update per E[T] = 2 s
    # invite 2, deadline 2: kept 1 − ¼ = ¾, E[L] = 1 + ¼ × 1 = 1.25 s
    assert sync_rate([1.0, 3.0], 1, 1.0, 2.0) == pytest.approx(0.6)
    assert sync_rate([1.0, 3.0, math.inf], 1, 0.0, None) == pytest.approx(0.5)  # cannot train: not invited
    assert sync_rate([], 1, 0.0, None) == 0.0


def test_prefers_async() -> None:
    assert prefers_async([1.0, 3.0], 1, 0.0, None, 1)  # 0.86/s vs 0.5/s
    assert not prefers_async([2.0] * 4, 4, 0.0, None, 4)  # b = n: V = 2, fresh: 2/s, not more than sync's 2/s
    # skew on the fast device: 0.73/s, still above 0.5/s; at h = 0.99 it counts ⌊1/0.1⌋ = 10: 0.45/s
    assert prefers_async([1.0, 3.0], 1, 0.0, None, 1, skews=[0.75, 0.0])
    assert not prefers_async([1.0, 3.0], 1, 0.0, None, 1, skews=[0.99, 0.0])


def test_version_interval_solves_arrivals_per_version_equal_the_buffer() -> None:
    assert version_interval([1.0, 3.0], 1) == pytest.approx(0.75)  # V + V/3 = 1
    assert version_interval([1.0, 3.0, 4.0], 2) == pytest.approx(12 / 7)  # 1 + V/3 + V/4 = 2
    assert version_interval([1.0, 4.0, 4.0, 4.0], 2) == pytest.approx(4 / 3)  # 1 + 3 V/4 = 2
    assert version_interval([2.0] * 4, 2) == pytest.approx(1.0)  # 4 V/2 = 2
    assert version_interval([1.0, 2.0], 5) == pytest.approx(2.0)  # b ≥ n: every device, the slowest sets V
    assert version_interval([math.inf], 1) == math.inf


def test_label_skew_is_the_total_variation_from_the_pooled_labels() -> None:
    assert label_skew([[3, 1], [1, 3]]) == pytest.approx([0.25, 0.25])  # fleet ½ ½; ½ (¼ + ¼)
    assert label_skew([[2, 0], [0, 2]]) == pytest.approx([0.5, 0.5])
    assert label_skew([[1, 1], [2, 2]]) == pytest.approx([0.0, 0.0])  # mixed like the fleet
    assert label_skew([[0, 0], [4, 0]]) == pytest.approx([0.0, 0.0])  # no data: no skew
    # fleet (6, 2, 2)/10; device (0, 1, 1)/2: ½ (0.6 + 0.3 + 0.3) = 0.6
    assert label_skew([[6, 1, 1], [0, 1, 1]]) == pytest.approx([0.15, 0.6])


def test_valued_scales_staleness_by_skew() -> None:
    d = polynomial(0.5)
    assert valued(0, 0.9, d) == 1.0  # fresh: worth 1 whatever the skew
    assert valued(3, 0.0, d) == pytest.approx(0.5)  # no skew: the discount, 4^-½
    assert valued(3, 0.75, d) == pytest.approx(7 ** -0.5)  # 3 / √¼ = 6 versions
    assert valued(2, 0.5, d) == pytest.approx(3 ** -0.5)  # ⌊2 / √½⌋ = ⌊2.83⌋ = 2
    assert valued(1, 1.0, d) == pytest.approx((MAX_STALENESS + 1) ** -0.5)
    assert valued(5, 0.75, lambda s: 1.0) == 1.0  # a constant discount counts stale updates fully


def test_async_rate_once_per_version() -> None:
    # [1, 3], b = 1: V = 0.75; staleness ⌊1/0.75⌋ = 1 and ⌊3/0.75⌋ = 4
    assert async_rate([1.0, 3.0], 1) == pytest.approx(2 ** -0.5 + 5 ** -0.5 / 3)
    assert async_rate([1.0, 3.0], 1, discount=lambda s: 1.0) == pytest.approx(4 / 3)  # Σ 1/max(T, V)
    # the fast device's labels skewed by ¾: its 1 version counts as ⌊1 / ½⌋ = 2
    assert async_rate([1.0, 3.0], 1, skews=[0.75, 0.0]) == pytest.approx(3 ** -0.5 + 5 ** -0.5 / 3)
    # [1, 4, 4, 4], b = 2: V = 4/3; the 1 s device waits for each version (1 per V, fresh), the
    # others are ⌊3⌋ = 3 stale: 0.75 + 3 × ½ / 4
    assert async_rate([1.0, 4.0, 4.0, 4.0], 2) == pytest.approx(0.75 + 3 * 0.5 / 4)
    assert async_rate([2.0] * 4, 2) == pytest.approx(4 * 3 ** -0.5 / 2)  # V = 1, 2 versions stale
    assert async_rate([math.inf], 1) == 0.0


def _event_simulation(durations: list[float], buffer: int, versions: int) -> tuple[float, list[float]]:
    """The async orchestrator's rule on fixed durations: every idle device that has not trained
    from the current version starts at once; a version is applied every ``buffer`` arrivals.
    Returns the mean version interval and each device's mean staleness, over the second half."""
    now, version, heap, started, busy, arrived = 0.0, 0, [], {}, set(), 0
    applied: list[float] = []
    stale: list[list[int]] = [[] for _ in durations]
    while version < versions:
        for d, t in enumerate(durations):
            if d not in busy and started.get(d, -1) < version:
                started[d] = version
                busy.add(d)
                heapq.heappush(heap, (now + t, d, version))
        now, d, v = heapq.heappop(heap)
        busy.discard(d)
        if version >= versions // 2:
            stale[d].append(version - v)
        arrived += 1
        if arrived % buffer == 0:
            version += 1
            applied.append(now)
    half = applied[versions // 2:]
    return (half[-1] - half[0]) / (len(half) - 1), [sum(s) / len(s) for s in stale]


@pytest.mark.parametrize("durations, buffer", [
    ([0.3, 0.5, 1.0, 2.2, 4.0, 7.5], 3), ([0.2, 0.2, 0.9, 1.7, 3.1, 6.0, 6.5, 9.0], 2),
    ([1.0, 1.1, 1.3, 5.0, 5.5], 1), ([0.4, 2.0, 2.5, 3.0, 8.0, 8.0, 9.5, 12.0, 20.0, 30.0], 4),
])
def test_the_version_model_matches_an_event_simulation_of_the_orchestrator(durations: list[float],
                                                                          buffer: int) -> None:
    interval, staleness = _event_simulation(durations, buffer, 3000)
    v = version_interval(durations, buffer)
    assert v == pytest.approx(interval, rel=0.02)
    for t, s in zip(durations, staleness, strict=True):
        assert abs(math.floor(t / v) - s) <= 1.0  # ⌊T/V⌋ within one version of the measured mean
