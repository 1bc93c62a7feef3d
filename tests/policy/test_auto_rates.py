"""Sync-vs-FedBuff update rates (auto's rule 5) against hand-computed cases."""

from __future__ import annotations

import math

import pytest

from fedfit.policy.auto_rates import (
    async_rate, binomial_below, expected_kept, expected_round_s, prefers_async, sync_rate,
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


def test_async_rate() -> None:
    # buffer 1: 4/3 updates/s arrive; the 1 s update is 4/3 versions stale, the 3 s one 4
    assert async_rate([1.0, 3.0], 1) == pytest.approx((7 / 3) ** -0.5 + 5 ** -0.5 / 3)
    assert async_rate([1.0, 3.0], 1, exponent=0.0) == pytest.approx(4 / 3)  # no discount: Σ 1/T
    assert async_rate([2.0] * 4, 4) == pytest.approx(4 * 2 ** -0.5 / 2)


def test_prefers_async() -> None:
    assert prefers_async([1.0, 3.0], 1, 0.0, None, 1)  # 0.80/s vs 0.5/s
    assert not prefers_async([2.0] * 4, 4, 0.0, None, 4)  # 1.41/s vs 2/s
