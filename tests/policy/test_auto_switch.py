"""The stall rule of ``auto``'s mid-run switch, against hand-computed least-squares values."""

from __future__ import annotations

import math

import pytest

from fedfit.policy.auto_switch import stalled, switch_point, sync_rounds, t_quantile_95, trend, window

FLAT = [2.0, 2.1, 1.9, 2.1, 2.0]          # slope 0: no fall at all
FALLING = [2.0, 1.85, 1.9, 1.7, 1.65]     # noisy, but falling by 0.085 a version


@pytest.mark.parametrize(("dof", "table"), [(3, 2.353), (5, 2.015), (10, 1.812), (30, 1.697)])
def test_t_quantile_matches_the_table_within_a_third_of_a_percent(dof: int, table: float) -> None:
    assert t_quantile_95(dof) == pytest.approx(table, rel=3e-3)


def test_trend_of_a_noisy_falling_series() -> None:
    # x̄ = 2, ȳ = 1.82: Σ(x−x̄)(y−ȳ) = −0.85 over Σ(x−x̄)² = 10 -> slope −0.085; residuals
    # 0.01, −0.055, 0.08, −0.035, 0 -> SSR 0.01075, s² = SSR / 3, se = √(s² / 10) = 0.018930
    slope, se = trend(FALLING)
    assert slope == pytest.approx(-0.085)
    assert se == pytest.approx(0.018930, rel=1e-4)


def test_a_flat_noisy_series_has_stalled() -> None:
    slope, se = trend(FLAT)  # deviations −.02, .08, −.12, .08, −.02: Σ(x−x̄)(y−ȳ) = 0
    assert slope == pytest.approx(0.0, abs=1e-12) and se == pytest.approx(math.sqrt(0.028 / 3 / 10))
    assert stalled(FLAT, 5)


def test_a_noisy_falling_series_has_not_stalled() -> None:
    # −0.085 + t(3) 2.35 × 0.01893 = −0.041 < 0: the fall is significant
    assert not stalled(FALLING, 5)


def test_a_rising_or_diverged_loss_has_stalled_and_too_few_points_have_not() -> None:
    assert stalled([1.0, 1.1, 1.2, 1.3, 1.4], 5)
    assert stalled([2.0, 1.9, 1.8, 1.7, math.inf], 5)
    assert not stalled(FLAT[:4], 5)
    assert not stalled([*FLAT[:2], None, *FLAT[2:4]], 5)  # a version not evaluated is no point


def test_only_the_last_window_counts() -> None:
    assert stalled([5.0, 4.0, 3.0, *FLAT], 5)  # an early fall does not hide a later stall
    assert not stalled([*FLAT, *FALLING], 5)


def test_switch_point_is_the_first_version_with_a_stall() -> None:
    assert switch_point([*FLAT, 1.0, 0.5], 5) == 5
    assert switch_point([2.0, None, 2.1, 1.9, 2.1, 2.0], 5) == 6
    assert switch_point(FALLING, 5) is None


def test_window_and_budget() -> None:
    assert (window(30, 3), window(6, 3), window(7, 2)) == (10, 5, 5)
    # 13 versions of 3 updates = 39 updates = 7 rounds of 6 (the last one part-used)
    assert (sync_rounds(13, 3, 6), sync_rounds(4, 2, 4), sync_rounds(0, 3, 6)) == (7, 2, 0)
