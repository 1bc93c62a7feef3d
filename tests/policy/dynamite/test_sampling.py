"""The pseudo-gradient's sampling variance under epoch-wise shuffling, against brute force."""

from __future__ import annotations

import itertools

import pytest

from fedfit.policy.dynamite.sampling import draw_variance


def _brute_force(values: list[float], batch: int, steps: int) -> float:
    """Var of (1/τ) Σ_s mean(batch_s) over every pair of epoch permutations (the trainer's draw:
    each epoch a fresh permutation cut into batches of ``batch``, the last one short), divided
    by the population variance of ``values``."""
    d = len(values)
    cuts = [list(range(i, min(i + batch, d))) for i in range(0, d, batch)]
    slots = [c for _ in range(2) for c in cuts][:steps]  # the first τ batches of two epochs
    assert len(slots) == steps and steps > len(cuts)
    means = []
    for p1, p2 in itertools.product(itertools.permutations(values), repeat=2):
        order = list(p1) + list(p2)
        offsets = [0] * len(cuts) + [d] * len(cuts)
        means.append(sum(sum(order[off + j] for j in c) / len(c) for c, off in zip(slots, offsets)) / steps)
    mu = sum(means) / len(means)
    var = sum((m - mu) ** 2 for m in means) / len(means)
    pop = sum((v - sum(values) / d) ** 2 for v in values) / d
    return var / pop


@pytest.mark.parametrize(("batch", "steps"), [(2, 4), (2, 5), (3, 3), (4, 3)])
def test_draw_variance_matches_every_permutation(batch: int, steps: int) -> None:
    assert draw_variance(5, batch, steps) == pytest.approx(_brute_force([0.0, 1.0, 3.0, 4.0, 7.0], batch, steps))


def test_independent_draws_only_within_one_short_pass() -> None:
    # n = 20 of D = 100 in one pass: the finite-population σ²/n · (D − n)/(D − 1)
    assert draw_variance(100, 20, 1) == pytest.approx(1 / 20 * 80 / 99)
    # 50 steps of 8 over 180 samples: epochs of 22 batches of 8 and one of 4 (23 steps), so two
    # whole epochs (noisy only through the short batch's double weight) and 4 batches of the third:
    whole = 22 / 8 + 1 / 4 - 23 ** 2 / 180
    third = 4 / 8 - 4 ** 2 / 180
    assert draw_variance(180, 8, 50) == pytest.approx((2 * whole + third) * 180 / 179 / 50 ** 2)
    assert draw_variance(180, 8, 50) < 1 / 400 / 10  # ≥ 10× below the σ²/(τ b) of independent draws


def test_whole_epochs_of_equal_batches_carry_no_noise_and_degenerate_inputs_none() -> None:
    assert draw_variance(12, 4, 6) == 0.0
    assert draw_variance(1, 1, 5) == 0.0 and draw_variance(10, 4, 0) == 0.0
