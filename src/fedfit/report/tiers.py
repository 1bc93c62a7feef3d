"""Per tier: who was invited and who took part, and the global model's accuracy on each
tier's own devices' local test data.

Participation is counted against *every* invitation (:func:`tier_participation`): a tier whose
invitations all end declined or offline has participation 0, not "100% of the invitations it
did not decline", and a tier never invited is named, not left out.

Non-IID partitions give every device its own label mix; a model fitted to the strong tiers can
look fine on the global test set and fail the weak tiers' users. Each tier's figure pools the
local held-out sets of its devices (so it is sample-weighted); ``fleet`` pools every device.

Local test sets are small (a tier of two sensors may hold 20-50 samples), so a tier's figure
carries a binomial standard error of several points. :func:`gap_standard_error` gives the
error of the worst-tier gap itself, :func:`noise_worst_gap` the worst-tier gap a model equally
accurate on every tier would still show (the minimum of several noisy tiers sits below their
mean), and :func:`label_weighted_accuracy` a lower-noise companion:
the global test set's per-class accuracy weighted by the tier's label mix (the tier's accuracy
under label skew alone, what a non-IID partition changes between tiers here).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt
import torch

from fedfit.data.datasets import ArrayDataset

def tier_participation(tiers: Sequence[str], invited: Mapping[str, int], updates: Mapping[str, int],
                       failures: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, float]]:
    """Each tier's invitations, updates, declines, offline failures and participation rate.

    Args:
        tiers: every tier of the fleet (a tier absent from ``invited`` was never invited).
        invited: invitations per tier.
        updates: updates returned per tier.
        failures: failures per tier, then per cause (``FailureCause`` values).

    Returns:
        Tier name → ``invited``, ``updates``, ``declined``, ``offline`` and ``participation``
        (updates / invitations; 0 for a tier never invited), in tier-name order.

    >>> tier_participation(["a", "b"], {"a": 4}, {"a": 1}, {"a": {"declined": 2, "offline": 1}})["a"]
    {'invited': 4, 'updates': 1, 'declined': 2, 'offline': 1, 'participation': 0.25}
    """
    out: dict[str, dict[str, float]] = {}
    for tier in sorted({*tiers, *invited}):
        n, ok, failed = invited.get(tier, 0), updates.get(tier, 0), failures.get(tier, {})
        out[tier] = {"invited": n, "updates": ok, "declined": failed.get("declined", 0),
                     "offline": failed.get("offline", 0), "participation": ok / n if n else 0.0}
    return out


#: (x, y) → (accuracy, loss) of the model under evaluation.
LocalEvaluator = Callable[[torch.Tensor, torch.Tensor], tuple[float, float]]


def local_accuracy_by_tier(tiers: Sequence[str], tests: Sequence[ArrayDataset],
                           evaluate: LocalEvaluator) -> dict[str, float]:
    """Accuracy on the pooled local test sets of each tier, plus ``fleet`` over all devices.

    Args:
        tiers: tier name of each device.
        tests: local test set of each device (empty ones are skipped).
        evaluate: scores the model on (x, y).

    Returns:
        Tier name → accuracy, in tier-name order, then ``fleet``; tiers with no local test
        samples are absent.
    """
    pooled: dict[str, list[ArrayDataset]] = {}
    for tier, test in zip(tiers, tests, strict=True):
        if len(test):
            pooled.setdefault(tier, []).append(test)
    out = {t: _accuracy(parts, evaluate) for t, parts in sorted(pooled.items())}
    every = [d for parts in pooled.values() for d in parts]
    if every:
        out["fleet"] = _accuracy(every, evaluate)
    return out


def _accuracy(parts: list[ArrayDataset], evaluate: LocalEvaluator) -> float:
    return evaluate(torch.cat([p.x for p in parts]), torch.cat([p.y for p in parts]))[0]


def worst_tier_gap(local: dict[str, float]) -> float | None:
    """How far the worst tier falls below the fleet figure (points in [0, 1]; ``None``: no data)."""
    tiers = [v for t, v in local.items() if t != "fleet"]
    return max(0.0, local["fleet"] - min(tiers)) if tiers and "fleet" in local else None


def binomial_standard_error(accuracy: float, samples: int) -> float:
    """Standard error √(p(1−p)/n) of an accuracy ``p`` measured on ``samples`` independent samples."""
    return math.sqrt(accuracy * (1.0 - accuracy) / samples) if samples > 0 else math.inf


def gap_standard_error(tier_accuracy: float, tier_samples: int, fleet_accuracy: float, fleet_samples: int) -> float:
    """Standard error of ``fleet − tier`` when the tier's samples are part of the fleet's.

    With r the rest of the fleet (n_r = n_f − n_t samples, accuracy a_r), the gap is
    a_f − a_t = (n_r/n_f)(a_r − a_t), so its variance is (n_r/n_f)² (a_r(1−a_r)/n_r + a_t(1−a_t)/n_t).

    Args:
        tier_accuracy, tier_samples: the tier's accuracy and local test samples.
        fleet_accuracy, fleet_samples: the same over every device (the tier's included).
    """
    rest = fleet_samples - tier_samples
    if tier_samples <= 0 or rest <= 0:
        return math.inf if tier_samples <= 0 else 0.0
    rest_accuracy = (fleet_accuracy * fleet_samples - tier_accuracy * tier_samples) / rest
    share = rest / fleet_samples
    return share * math.hypot(binomial_standard_error(rest_accuracy, rest),
                              binomial_standard_error(tier_accuracy, tier_samples))


def label_counts_by_tier(tiers: Sequence[str], datasets: Sequence[ArrayDataset],
                         num_classes: int) -> dict[str, list[int]]:
    """Each tier's label histogram over its devices' ``datasets`` (tier-name order)."""
    counts: dict[str, list[int]] = {}
    for tier, data in zip(tiers, datasets, strict=True):
        row = counts.setdefault(tier, [0] * num_classes)
        for label, n in enumerate(torch.bincount(data.y, minlength=num_classes).tolist()):
            row[label] += n
    return dict(sorted(counts.items()))


def label_weighted_accuracy(class_accuracy: Sequence[float], label_counts: Sequence[int]) -> float:
    """Σ_c π_c a_c: per-class accuracy ``a_c`` (on a shared test set) weighted by a label mix π.

    >>> label_weighted_accuracy([1.0, 0.5], [1, 3])
    0.625
    """
    total = sum(label_counts)
    if total <= 0:
        raise ValueError("label_weighted_accuracy needs at least one labelled sample")
    return sum(a * n for a, n in zip(class_accuracy, label_counts, strict=True)) / total


def label_weighted_standard_error(class_accuracy: Sequence[float], class_samples: Sequence[int],
                                  label_counts: Sequence[int]) -> float:
    """Standard error √(Σ_c π_c² a_c(1−a_c)/n_c) of :func:`label_weighted_accuracy`.

    ``class_samples`` are the shared test set's samples per class (n_c); the label mix π is
    taken as exact. A class the mix uses but the test set lacks makes it infinite.
    """
    total = sum(label_counts)
    variance = 0.0
    for a, n, count in zip(class_accuracy, class_samples, label_counts, strict=True):
        if count:
            variance += (count / total) ** 2 * (a * (1 - a) / n if n else math.inf)
    return math.sqrt(variance)


def noise_worst_gap(samples: Mapping[str, int], accuracy: float, rng: np.random.Generator,
                    draws: int = 10_000) -> npt.NDArray[np.float64]:
    """Worst-tier gaps of a model with the same true ``accuracy`` on every tier: noise alone.

    Each draw scores every tier's ``samples`` local test samples as Binomial(n_t, accuracy),
    pools them into the fleet figure and takes :func:`worst_tier_gap`. Its mean is the gap the
    metric reports for a perfectly fair model; its upper quantiles say how large a gap the
    tier test sets cannot tell from fairness.

    Args:
        samples: tier → local test samples (tiers with none left out).
        accuracy: the true accuracy in [0, 1] assumed for every tier.
        rng: the source of randomness (pass a seeded generator).
        draws: Monte-Carlo draws.

    Returns:
        ``draws`` gaps in [0, 1].
    """
    n = np.array([v for v in samples.values() if v > 0], dtype=np.int64)
    correct = rng.binomial(n, accuracy, size=(draws, len(n)))
    fleet = correct.sum(axis=1) / n.sum()
    gaps: npt.NDArray[np.float64] = np.maximum(0.0, fleet - (correct / n).min(axis=1))
    return gaps
