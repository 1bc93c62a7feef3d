"""Sync with a deadline vs FedBuff: the rate of valued updates each would fold.

``auto`` chooses its orchestration mode (rule 5) and revises the verdict from measured durations
by comparing two expected rates computed from one list of task durations (one per device that
can train: predicted before the first round, measured after) and, for FedBuff, each device's
label skew.

**Synchronous rounds** invite ``m = ceil(k (1 + ε))`` devices and end at the k-th update or at
the deadline D, whichever comes first (:class:`~fedfit.orchestration.sync.SyncOrchestrator`).
With the invited durations drawn from the list (with replacement, an approximation of drawing
without), F the list's empirical distribution function:

* round length ``L = min(D, T_(k:m))``, ``E[L] = ∫₀ᴰ P(Bin(m, F(t)) < k) dt`` (F is a step
  function, so the integral is a finite sum);
* updates kept ``U = min(k, Bin(m, F(D)))``;
* rate ``E[U] / E[L]`` updates per second, each fresh (value 1).

**FedBuff as fedfit runs it** (:class:`~fedfit.orchestration.asynchronous.AsyncOrchestrator`,
``concurrency: null``): a device never trains twice from one model version. When a version is
applied every idle device is invited on it; a device that returns before the next version waits
for it, one that returns later starts again at once (the version it trained from is gone). In a
steady state with versions every V seconds, device i therefore returns an update every
``max(T_i, V)`` seconds, and a version is applied every b arrivals (b the buffer):

* **version interval** V solves ``Σ_i min(1, V / T_i) = b`` (arrivals per version = b). The left
  side is continuous and increasing in V, so V is unique; it is found exactly piecewise
  (:func:`version_interval`). With b ≥ n, every device trains once per version and a version
  waits for the slowest: V = max T_i (the orchestrator applies a short buffer when nobody else
  can be invited).
* **staleness**: a device with T_i ≤ V starts as a version is applied and returns by the
  next: 0 versions stale. A slower one restarts at once, at a random phase of the version
  cycle, and sees ``⌊T_i / V⌋`` or ``⌈T_i / V⌉`` versions applied while it trains; we take
  ``s_i = ⌊T_i / V⌋``. (Checked against an event simulation of the orchestrator's rule in
  ``tests/policy/test_auto_rates.py``: V exact, s_i within one version. The cruder
  ``Σ_i 1 / ⌈T_i / V⌉ = b``, a device restarting only at version boundaries, over-states V by
  10–40% there.)
* **value** of device i's update: the configured staleness discount ``d`` (the aggregation's
  ``aggregation.staleness``, FedBuff's default ``(1 + s)^(−½)``) at its skew-scaled staleness
  (below); rate ``Σ_i value_i / max(T_i, V)``.

**Staleness costs more on skewed data.** In FedBuff's convergence bound (Nguyen et al. 2022,
"Federated Learning with Buffered Asynchronous Aggregation", Thm. 1) the error staleness adds
grows with τ² times the variance of the updates: the devices' sampling noise σ_l² plus the
spread of their data σ_g². A discount tuned on IID data (σ_g = 0) prices only the first. An
update whose variance is the share ρ = σ_g² / (σ_l² + σ_g²) skew errs under staleness s as an
IID update would under ``s_eff`` with ``s_eff² σ_l² = s² (σ_l² + σ_g²)``: ``s_eff = s / √(1 − ρ)``.
ρ is not observable before training; its estimate here is the device's **label skew**
``h_i = TV(q_i, q) = ½ Σ_c |q_i(c) − q(c)|``, the total-variation distance between its label
distribution and the fleet's pooled one (0 when its labels are mixed like the fleet's, → 1 when
they are disjoint from the rest), computed from the label counts devices report
(:func:`label_skew`); never a data set's or a tier's name. Its value is
``d(⌊s_i / √(1 − h_i)⌋)`` (an integer, as the discount takes versions). With h = 0 it is the
configured discount alone; a fresh update (s = 0) is worth 1 in either mode.

FedBuff runs when its rate of valued updates exceeds sync's (× ``async_advantage``). What it
leaves out: availability (a device offline is neither invited nor training), failures, the
concept shift labels cannot show (devices that label the same inputs differently), and that a
sync round's k updates come from the fast part of the fleet.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

#: A staleness discount: versions elapsed → factor in (0, 1] (as :mod:`fedfit.aggregation.staleness`).
Discount = Callable[[int], float]

#: The most versions of skew-scaled staleness counted (a device whose labels the fleet lacks
#: entirely, h = 1, would otherwise be infinitely stale).
MAX_STALENESS = 10 ** 6


def polynomial(exponent: float = 0.5) -> Discount:
    """FedBuff's default discount ``(1 + s)^(−exponent)``.

    >>> polynomial(0.5)(3)
    0.5
    """
    return lambda s: float((1 + max(0, s)) ** -exponent)


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


def version_interval(durations: Sequence[float], buffer_size: int) -> float:
    """V solving ``Σ_i min(1, V / T_i) = b`` over positive finite durations (module docstring).

    With the j fastest devices returning every version (T ≤ V) and the rest at rate 1/T_i,
    ``V = (b − j) / Σ_{i > j} 1/T_(i)``, taken for the first j where it does not exceed T_(j+1).

    >>> version_interval([1.0, 3.0], 1)  # V/1 + V/3 = 1: V = 0.75
    0.75
    >>> round(version_interval([1.0, 3.0, 4.0], 2), 6)  # j = 1: (2 − 1) / (1/3 + 1/4) = 12/7 ≤ 3
    1.714286
    """
    ordered = sorted(t for t in durations if math.isfinite(t) and t > 0)
    if not ordered:
        return math.inf
    b = min(buffer_size, len(ordered))
    for j in range(b):
        v = (b - j) / sum(1.0 / t for t in ordered[j:])
        if v <= ordered[j]:
            return v
    return ordered[b - 1]


def label_skew(counts: Sequence[Sequence[int]]) -> list[float]:
    """Each device's total-variation distance between its label distribution and the fleet's.

    >>> label_skew([[3, 1], [1, 3]])  # fleet ½, ½; each device ¾, ¼: ½ (¼ + ¼)
    [0.25, 0.25]
    """
    pooled = [sum(c) for c in zip(*counts, strict=True)] if counts else []
    total = sum(pooled)
    out = []
    for c in counts:
        n = sum(c)
        out.append(0.0 if n == 0 or total == 0 else 0.5 * sum(abs(x / n - y / total) for x, y in zip(c, pooled)))
    return out


def valued(staleness: int, skew: float, discount: Discount) -> float:
    """The discount at the skew-scaled staleness ``⌊s / √(1 − h)⌋`` (module docstring).

    >>> round(valued(3, 0.75, polynomial(0.5)), 6)  # s_eff = 3 / ½ = 6: 7^(−½)
    0.377964
    """
    if staleness <= 0:
        return discount(0)
    room = 1.0 - min(max(skew, 0.0), 1.0)
    scaled = staleness / math.sqrt(room) if room > 0 else math.inf
    return discount(int(min(scaled, MAX_STALENESS)))


def staleness(duration_s: float, interval_s: float) -> int:
    """Versions applied while a task of ``duration_s`` trains, versions every ``interval_s``:
    0 when it fits in one (it started as a version was applied), else ``⌊T / V⌋``.

    >>> staleness(2.0, 2.0), staleness(2.5, 1.0)
    (0, 2)
    """
    return 0 if duration_s <= interval_s * (1 + 1e-9) else math.floor(duration_s / interval_s)


def async_rate(durations: Sequence[float], buffer_size: int, discount: Discount | None = None,
               skews: Sequence[float] | None = None) -> float:
    """Valued updates per second of FedBuff, once per version (module docstring).

    ``skews``: each device's label skew, aligned with ``durations`` (``None``: all 0).
    """
    d = discount or polynomial()
    pairs = [(t, 0.0 if skews is None else h) for t, h in zip(durations, skews or [0.0] * len(durations), strict=True)
             if math.isfinite(t) and t > 0]
    if not pairs:
        return 0.0
    v = version_interval([t for t, _ in pairs], buffer_size)
    return sum(valued(staleness(t, v), h, d) / max(t, v) for t, h in pairs)


def prefers_async(durations: Sequence[float], k: int, over_selection: float, deadline_s: float | None,
                  buffer_size: int, discount: Discount | None = None, skews: Sequence[float] | None = None) -> bool:
    """Whether FedBuff's rate of valued updates exceeds sync's on these durations."""
    return async_rate(durations, buffer_size, discount, skews) > sync_rate(durations, k, over_selection, deadline_s)
