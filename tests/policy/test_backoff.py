"""Retry back-off doubles per failure in a row and stops at its cap."""

from __future__ import annotations

from fedfit.policy.backoff import Backoff


def test_delay_doubles_then_caps() -> None:
    backoff = Backoff(base_s=60.0, cap_s=1000.0)

    delays = [backoff.delay_s(n) for n in range(1, 7)]

    assert delays == [60.0, 120.0, 240.0, 480.0, 960.0, 1000.0]


def test_no_failure_means_no_wait_and_a_long_streak_stays_at_the_cap() -> None:
    backoff = Backoff(base_s=60.0, cap_s=3600.0)

    assert backoff.delay_s(0) == 0.0
    assert backoff.delay_s(10_000) == 3600.0


def test_factor_one_is_a_constant_wait() -> None:
    assert [Backoff(base_s=30.0, cap_s=100.0, factor=1.0).delay_s(n) for n in (1, 5)] == [30.0, 30.0]
