"""How much mini-batch noise a task's pseudo-gradient carries, in units of σ².

The estimator (:mod:`.estimate`) reads σ², the per-sample gradient variance, off the part of a
device's gradient change that its smoothness does not explain. That change's sampling noise is
the variance of the pseudo-gradient ``g_i = (1/τ) Σ_s mean(batch_s)``, and fedfit's trainer
draws its batches as *epochs*: each epoch is a fresh permutation of the D samples the device
holds, cut into ⌊D/B⌋ batches of B and one short batch of D mod B; a task stops after τ steps,
possibly mid-epoch. Within an epoch a sample in a batch of s carries weight 1/(τ s) and an
unvisited one 0, and which samples get which weight is a uniform permutation, so (finite
population sampling, weights w_j, per-sample variance σ² over the D samples)::

    Var(Σ_j w_j x_π(j)) = σ² · D/(D − 1) · Σ_j (w_j − w̄)²,   Σ_j (w_j − w̄)² = (Σ_s 1/s − m²/D) / τ²

for the epoch's m batches of sizes s; epochs are independent, so their terms add. A full epoch
of equal batches sums to the full-data mean and carries no noise at all: a task of 50 steps of 8
over 180 samples carries about 13× less noise than the ``σ²/(τ b)`` of independent draws, which
is what the estimator assumed before (and so read σ² about that much too low).
"""

from __future__ import annotations

import functools


def _epoch_term(sizes: list[int], examples: int) -> float:
    """Σ_j (w_j − w̄)² · D/(D − 1) of one epoch whose batches have ``sizes`` (weights × τ)."""
    m = len(sizes)
    return max(0.0, sum(1 / s for s in sizes) - m * m / examples) * examples / (examples - 1)


def draw_variance(examples: int, batch: int, steps: int) -> float:
    """The variance, in units of σ², of the mean gradient of ``steps`` batches of ``batch``
    drawn epoch by epoch from ``examples`` samples (the trainer's shuffled passes).

    >>> draw_variance(10, 4, 1)  # one batch of 4 of 10: (1/4)(10 − 4)/(10 − 1)
    0.16666666666666666
    >>> draw_variance(8, 4, 2), draw_variance(8, 4, 4)  # whole epochs: the full-data mean
    (0.0, 0.0)
    >>> round(draw_variance(10, 4, 3), 6)  # batches 4, 4, 2: (1/4 + 1/4 + 1/2 − 9/10) · 10/9 / 9
    0.012346
    """
    if examples <= 1 or steps <= 0 or batch <= 0:
        return 0.0
    b = min(batch, examples)
    full, short = divmod(examples, b)
    epoch = [b] * full + ([short] if short else [])
    epochs, left = divmod(steps, len(epoch))
    total = epochs * _epoch_term(epoch, examples)
    if left:
        total += _epoch_term(epoch[:left], examples)
    return total / (steps * steps)


@functools.lru_cache(maxsize=1 << 16)  # pure; devices holding as many samples share it
def step_noise(examples: int, batch: int, steps: int) -> float:
    """v: the per-step gradient variance, in units of σ², that a task of ``steps`` batches of
    ``batch`` drawn epoch by epoch from ``examples`` samples is worth in the bound: τ × the
    variance of its mean step gradient (module docstring; 1/b for independent draws).

    >>> step_noise(12, 4, 6), step_noise(12, 4, 3)  # whole epochs: no sampling error in the sum
    (0.0, 0.0)
    >>> round(step_noise(100, 20, 1), 6)  # one batch of 20 of 100: 1/20 · 80/99
    0.040404
    >>> round(step_noise(10, 4, 3), 6)  # batches 4, 4, 2: (1/4 + 1/4 + 1/2 − 9/10) · 10/9 / 3
    0.037037
    """
    return max(0, steps) * draw_variance(examples, batch, steps)
