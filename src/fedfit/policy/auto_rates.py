"""Sync with a deadline vs FedBuff: the rate of staleness-discounted updates each would fold.

``auto`` chooses its orchestration mode (rule 5) and revises it from measured durations by
comparing two expected rates computed from one list of task durations (one per device that can
train: predicted before the first round, measured after):

**Synchronous rounds** invite ``m = ceil(k (1 + ε))`` devices and end at the k-th update or at
the deadline D, whichever comes first (:class:`~fedfit.orchestration.sync.SyncOrchestrator`).
With the invited durations drawn from the list (with replacement, an approximation of drawing
without), F the list's empirical distribution function:

* round length ``L = min(D, T_(k:m))``, ``E[L] = ∫₀ᴰ P(Bin(m, F(t)) < k) dt`` (F is a step
  function, so the integral is a finite sum);
* updates kept ``U = min(k, Bin(m, F(D)))``;
* rate ``E[U] / E[L]`` updates per second, each at staleness 0 (weight 1).

**FedBuff** keeps every device training (``concurrency: null``, auto's setting): device i
returns ``1 / T_i`` updates per second, the server folds a version every ``b`` updates, so while
device i trains, ``T_i · Σ_j 1/T_j`` updates arrive and its update is ``s_i = T_i Σ_j (1/T_j) / b``
versions stale; the aggregation discounts it by ``(1 + s_i)^(−a)`` (polynomial staleness, ``a``
the exponent). Rate of discounted updates: ``Σ_i (1 + s_i)^(−a) / T_i``.

FedBuff runs when its discounted rate exceeds sync's. This replaces the earlier threshold on
p90 / p10 of predicted times (> 50), which had no derivation. What it leaves out: availability
(a device offline is neither invited nor training), failures, and that a sync round's k updates
come from the fast part of the fleet (data skew) — the rates count updates, not their value
beyond staleness.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def binomial_below(m: int, p: float, k: int) -> float:
    """P(Bin(m, p) < k).

    >>> round(binomial_below(2, 0.5, 1), 6)  # both fail: 0.25
    0.25
    """
    return sum(math.comb(m, j) * p ** j * (1.0 - p) ** (m - j) for j in range(min(k, m + 1)))


def expected_kept(m: int, p: float, k: int) -> float:
    """E[min(k, Bin(m, p))]."""
    return sum(min(j, k) * math.comb(m, j) * p ** j * (1.0 - p) ** (m - j) for j in range(m + 1))


def expected_round_s(durations: Sequence[float], m: int, k: int, deadline_s: float) -> float:
    """E[min(D, k-th smallest of m draws)] from the empirical distribution of ``durations``."""
    n = len(durations)
    ordered = sorted(durations)
    total, start = 0.0, 0.0
    for i in range(n):  # on [start, ordered[i]) F(t) = i / n; past the largest, F = 1 and nothing is added
        end = min(ordered[i], deadline_s)
        if end > start:
            total += (end - start) * binomial_below(m, i / n, k)
            start = end
        if start >= deadline_s:
            break
    return total


def sync_rate(durations: Sequence[float], k: int, over_selection: float, deadline_s: float | None) -> float:
    """Expected updates per second of sync rounds (``deadline_s`` ``None``: none, wait for k)."""
    finite = [t for t in durations if math.isfinite(t)]  # a device that cannot train is not invited
    if not finite or k < 1:
        return 0.0
    m = math.ceil(k * (1.0 + over_selection))
    deadline = math.inf if deadline_s is None else deadline_s
    p_on_time = sum(1 for t in finite if t <= deadline) / len(finite)
    length = expected_round_s(finite, m, k, deadline)
    return expected_kept(m, p_on_time, k) / length if length > 0 else math.inf


def async_rate(durations: Sequence[float], buffer_size: int, exponent: float = 0.5) -> float:
    """Discounted updates per second of FedBuff with every device training."""
    finite = [t for t in durations if math.isfinite(t) and t > 0]
    if not finite:
        return 0.0
    arrivals = sum(1.0 / t for t in finite)
    return sum((1.0 + t * arrivals / buffer_size) ** -exponent / t for t in finite)


def prefers_async(durations: Sequence[float], k: int, over_selection: float, deadline_s: float | None,
                  buffer_size: int, exponent: float = 0.5) -> bool:
    """Whether FedBuff's discounted update rate exceeds sync's on these durations."""
    return async_rate(durations, buffer_size, exponent) > sync_rate(durations, k, over_selection, deadline_s)
