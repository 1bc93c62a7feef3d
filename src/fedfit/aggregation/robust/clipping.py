"""Update-norm clipping: bound each device's move before any rule combines it.

Each contribution's delta Δ_i (over the coordinates it holds) is scaled to norm at most C::

    x_i ← x + Δ_i · min(1, C / ‖Δ_i‖₂)

C is fixed (``bound``), as in the norm-bounding defence against backdoors of Sun, Kairouz,
Suresh and McMahan 2019 ("Can You Really Backdoor Federated Learning?") and in DP-FedAvg, or
adaptive: the ``quantile``-th quantile of the round's update norms (a per-round version of
Andrew, Thakkar, McMahan and Ramaswamy 2021, "Differentially Private Learning with Adaptive
Clipping", which tracks the same quantile across rounds). A clipped scaled-up update keeps
its direction but no longer its boost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from fedfit.aggregation.average import Contribution, masked_weighted_average
from fedfit.aggregation.robust.stack import Combine, norms, rescaled, stack
from fedfit.types import Params


def clip_bound(update_norms: torch.Tensor, bound: float | None, quantile: float | None) -> float:
    """The clipping norm C: ``bound`` if given, else the ``quantile`` of ``update_norms``.

    >>> clip_bound(torch.tensor([1.0, 2.0, 3.0]), None, 0.5)
    2.0
    """
    if bound is not None:
        return bound
    if quantile is None or len(update_norms) == 0:
        return float("inf")
    return float(torch.quantile(update_norms.to(torch.float64), quantile))


def clip_contributions(master: Params, contributions: Sequence[Contribution], *, bound: float | None = None,
                       quantile: float | None = None) -> list[Contribution]:
    """Every contribution with its delta clipped to norm C (see :func:`clip_bound`).

    >>> m = {"w": torch.zeros(2)}
    >>> c = clip_contributions(m, [Contribution({"w": torch.tensor([3.0, 4.0])}, 1.0)], bound=1.0)
    >>> c[0].params["w"]
    tensor([0.6000, 0.8000])
    """
    update_norms = norms(stack(master, contributions), len(contributions))
    c_norm = clip_bound(update_norms, bound, quantile)
    return [rescaled(master, c, min(1.0, c_norm / float(n)) if float(n) > 0 else 1.0)
            for c, n in zip(contributions, update_norms, strict=True)]


@dataclass(frozen=True)
class NormClip:
    """Clip every delta, then combine with ``inner`` (the masked weighted average by default).

    Attributes:
        bound: fixed clipping norm C; ``None``: adaptive.
        quantile: adaptive C as this quantile of the round's update norms (used when ``bound``
            is ``None``).
        inner: the rule that combines the clipped contributions.
    """

    bound: float | None = None
    quantile: float | None = 0.5
    inner: Combine = masked_weighted_average

    def __call__(self, master: Params, contributions: Sequence[Contribution]) -> Params:
        return self.inner(master, clip_contributions(master, contributions, bound=self.bound,
                                                     quantile=self.quantile))
