"""Accuracy of the global model on each tier's own devices' local test data.

Non-IID partitions give every device its own label mix; a model fitted to the strong tiers can
look fine on the global test set and fail the weak tiers' users. Each tier's figure pools the
local held-out sets of its devices (so it is sample-weighted); ``fleet`` pools every device.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from fedfit.data.datasets import ArrayDataset

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
