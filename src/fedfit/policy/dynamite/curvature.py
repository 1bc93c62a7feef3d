"""The bound's mini-batch noise when the model forgets its early steps within a round.

``noise_model: reshuffled`` (:func:`~fedfit.policy.dynamite.sampling.step_noise`) prices the
sampling error of a round's *summed* steps, which the trainer's reshuffled epochs cancel. That
is the error at the round's end only while the steps' curvature is negligible. Along a noise
direction of curvature λ (a quadratic model of the loss there), a local step contracts the
error by q = 1 − ηλ before adding its own batch's noise ξ_s::

    e_{s+1} = q · e_s − η ξ_s,    so    e_τ = −η Σ_s q^{τ−1−s} ξ_s

The round ends with the variance of a *weighted* sum of the τ batch means, c_s = q^{τ−1−s}. Per
epoch (a uniform permutation of the D samples cut into batches; a sample in step s's batch of
size n_s carries weight c_s / n_s), finite-population sampling gives, in units of σ²::

    V(q) = Σ_epochs (Σ_s c_s² / n_s − (Σ_s c_s)² / D) · D / (D − 1)

and independent draws of the same batches give I(q) = Σ_s c_s² / n_s. The bound charges noise
per step; the round's steps weigh Σ_s c_s² at its end, so the per-step noise is::

    v(q) = V(q) / Σ_s c_s²

(independent draws of b: I / Σ c² = 1/b, the ``iid`` term; so v = r/b with r = V / I the share of
independent draws' noise that reshuffling leaves at the round's end). Limits: q = 1 (no
curvature, λ = 0): v = V(1)/τ, exactly :func:`~fedfit.policy.dynamite.sampling.step_noise` (the
sum's cancellation); q = 0 (ηλ ≥ 1: each step forgets the ones before it): only the last batch
counts, v = (1/n)(D − n)/(D − 1), independent draws' 1/b up to the without-replacement factor.
In between, the early steps of each epoch fade, and with them the part of the cancellation they
carried. λ is β_σ, the curvature of the loss along the σ² probe's
direction g_A − g_B (:mod:`fedfit.training.curvature_probe`), measured per task:
q = clamp(1 − η β_σ, 0, 1) (:func:`contraction`).
"""

from __future__ import annotations

import functools
import math


def contraction(lr: float, curvature: float) -> float:
    """q = 1 − η β_σ, clamped to [0, 1] (a negative curvature contracts nothing; ηβ_σ ≥ 1 forgets all).

    >>> contraction(0.05, 4.0), contraction(0.05, 40.0), contraction(0.05, -1.0)
    (0.8, 0.0, 1.0)
    """
    return min(1.0, max(0.0, 1.0 - lr * curvature))


def _geometric(ratio: float, count: int) -> float:
    """Σ_{k<count} ratio^k, accurate for a ratio close to 1."""
    if count <= 0:
        return 0.0
    if ratio >= 1.0:
        return float(count)
    if ratio <= 0.0:
        return 1.0
    return math.expm1(count * math.log(ratio)) / math.expm1(math.log(ratio))


def _chunk_sums(first: int, count: int, size: int, steps: int, q: float) -> tuple[float, float]:
    """(Σ c_s, Σ c_s² / size) over steps ``first`` … ``first + count − 1``, each of ``size`` samples."""
    if count <= 0:
        return 0.0, 0.0
    lowest = steps - first - count  # the exponent of the chunk's last step
    linear = q ** lowest * _geometric(q, count)
    squares = q ** (2 * lowest) * _geometric(q * q, count)
    return linear, squares / size


def contracted_variances(examples: int, batch: int, steps: int, q: float) -> tuple[float, float, float]:
    """(V(q), I(q), Σ_s c_s²) of ``steps`` batches of ``batch`` drawn epoch by epoch from
    ``examples`` samples (module docstring), in units of σ².

    >>> v, i, n = contracted_variances(8, 4, 2, 1.0)  # one whole epoch: the full-data mean
    >>> v, i, n
    (0.0, 0.5, 2.0)
    >>> [round(x, 6) for x in contracted_variances(8, 4, 2, 0.5)]  # c = (½, 1): ((¼ + 1)/4 − 1.5²/8) · 8/7
    [0.035714, 0.3125, 1.25]
    """
    b = min(batch, examples)
    full, short = divmod(examples, b)
    length = full + (1 if short else 0)
    v = i = 0.0
    for first in range(0, steps, length):
        count = min(length, steps - first)
        s1, s2 = _chunk_sums(first, min(count, full), b, steps, q)
        if count > full:  # the epoch's short last batch
            t1, t2 = _chunk_sums(first + full, 1, short, steps, q)
            s1, s2 = s1 + t1, s2 + t2
        v += max(0.0, s2 - s1 * s1 / examples) * examples / (examples - 1)
        i += s2
    return v, i, _geometric(q * q, steps)


@functools.lru_cache(maxsize=1 << 16)
def contracted_noise(examples: int, batch: int, steps: int, q: float) -> float:
    """v(q): the per-step gradient variance, in units of σ², of ``steps`` batches of ``batch``
    from ``examples`` samples with step contraction ``q`` (module docstring).

    >>> contracted_noise(12, 4, 3, 1.0)  # one whole epoch, no curvature: reshuffled's 0
    0.0
    >>> round(contracted_noise(12, 4, 3, 0.0), 6)  # last batch only: 1/4 · (12 − 4)/(12 − 1)
    0.181818

    A pure function of four numbers, so it is kept (bounded LRU): a re-plan evaluates it for every
    planned device at every (τ, b) it scores, and devices holding as many samples share the value —
    the planning's cost grows with the distinct data sizes, not with the devices.
    """
    if examples <= 1 or steps <= 0 or batch <= 0:
        return 0.0
    v, _, weight = contracted_variances(examples, batch, steps, min(1.0, max(0.0, q)))
    return v / weight
