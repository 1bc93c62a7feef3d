"""Robust aggregation on masked, partial updates: rules that replace the plain masked average.

Each rule is a :data:`Combine` (master and contributions in, new master out) that works on the
deltas each device holds (:mod:`~fedfit.aggregation.robust.stack`), so sub-models, dropout
subsets, pruning and layer masks fold in as with the plain average. One algorithm per module:

* :class:`NormClip` — fixed or adaptive-quantile update-norm clipping around any rule;
* :func:`coordinate_median`, :class:`TrimmedMean` — coordinate-wise, over each coordinate's holders;
* :class:`Krum` — Krum / multi-Krum on distances over shared coordinates;
* :class:`FLTrust` — cosine trust against a server root-set update (outlier down-weighting);
* :class:`GeometricMedian` — RFA's Weiszfeld re-weighting (outlier down-weighting).
"""

from __future__ import annotations

from dataclasses import dataclass

from fedfit.aggregation.average import masked_weighted_average
from fedfit.aggregation.robust.clipping import NormClip, clip_bound, clip_contributions
from fedfit.aggregation.robust.fltrust import FLTrust, RootUpdate
from fedfit.aggregation.robust.geometric_median import GeometricMedian
from fedfit.aggregation.robust.krum import Krum
from fedfit.aggregation.robust.median import coordinate_median
from fedfit.aggregation.robust.stack import Combine
from fedfit.aggregation.robust.trimmed_mean import TrimmedMean

__all__ = [
    "Combine", "FLTrust", "GeometricMedian", "Krum", "NormClip", "RobustSettings", "RootUpdate", "TrimmedMean",
    "clip_bound", "clip_contributions", "coordinate_median", "robust_combine",
]


@dataclass(frozen=True, slots=True)
class RobustSettings:
    """What ``aggregation.robust`` asks for.

    Attributes:
        rule: ``mean`` (the plain masked average), ``median``, ``trimmed_mean``, ``krum``,
            ``multi_krum``, ``fltrust`` or ``geometric_median``.
        clip: ``none``, ``fixed`` (norm ``clip_bound``) or ``adaptive`` (``clip_quantile`` of the
            round's norms), applied before the rule.
        clip_bound: fixed clipping norm.
        clip_quantile: adaptive clipping quantile.
        trim_fraction: β of the trimmed mean.
        byzantine: f assumed by Krum.
        krum_keep: m updates multi-Krum averages.
        iterations: Weiszfeld steps of the geometric median.
    """

    rule: str = "mean"
    clip: str = "none"
    clip_bound: float = 1.0
    clip_quantile: float = 0.5
    trim_fraction: float = 0.1
    byzantine: int = 1
    krum_keep: int = 5
    iterations: int = 4


def robust_combine(settings: RobustSettings, root_update: RootUpdate | None = None) -> Combine:
    """The combining rule ``settings`` describe (``root_update`` is needed by ``fltrust`` only).

    >>> robust_combine(RobustSettings()) is masked_weighted_average
    True
    """
    rules: dict[str, Combine] = {
        "mean": masked_weighted_average,
        "median": coordinate_median,
        "trimmed_mean": TrimmedMean(settings.trim_fraction),
        "krum": Krum(settings.byzantine, 1),
        "multi_krum": Krum(settings.byzantine, settings.krum_keep),
        "geometric_median": GeometricMedian(settings.iterations),
    }
    if settings.rule == "fltrust":
        if root_update is None:
            raise ValueError("the fltrust rule needs a root update")
        rules["fltrust"] = FLTrust(root_update)
    combine = rules[settings.rule]
    if settings.clip == "fixed":
        return NormClip(bound=settings.clip_bound, inner=combine)
    if settings.clip == "adaptive":
        return NormClip(bound=None, quantile=settings.clip_quantile, inner=combine)
    return combine
