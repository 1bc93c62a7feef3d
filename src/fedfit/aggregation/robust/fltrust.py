"""FLTrust: trust each update as far as it points where the server's own small root set does.

Cao, Fang, Liu and Gong 2021, "FLTrust: Byzantine-robust Federated Learning via Trust
Bootstrapping" (NDSS). The server trains the current model on a small clean root data set
(≈100 samples) to get a reference update Δ₀. Each device update gets the trust score
TS_i = ReLU(cos(Δ_i, Δ₀)) and is rescaled to Δ₀'s norm; the model moves by the trust-weighted
mean::

    x ← x + Σ_i TS_i · (‖Δ₀‖/‖Δ_i‖) Δ_i / Σ_i TS_i

Cosine-based down-weighting that needs no assumed number of attackers and survives a majority
of them, at the price of a root set and one server-side training pass per round.
Heterogeneous updates: cosine and norms use Δ₀ restricted to the coordinates device i holds,
and the mean runs per coordinate over its holders (the one masked weighted average, weights
TS_i).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from fedfit.aggregation.average import Contribution, masked_weighted_average
from fedfit.aggregation.robust.stack import held_mask, rescaled
from fedfit.types import Params

#: The current master → the server's model after training on its root set.
RootUpdate = Callable[[Params], Params]


def trust(master: Params, reference: Params, c: Contribution) -> tuple[float, float]:
    """(TS_i, ‖Δ₀ on i's coordinates‖ / ‖Δ_i‖) for contribution ``c``; (0, 0) for a null update."""
    dot = own = ref = 0.0
    for name, old in master.items():
        if not old.is_floating_point():
            continue
        mask = held_mask(c, name, old)
        if not bool(mask.any()):
            continue
        base = old.to(torch.float64)[mask]
        d_i = c.params[name].to(torch.float64)[mask] - base
        d_0 = reference[name].to(torch.float64)[mask] - base
        dot, own, ref = dot + float(d_i @ d_0), own + float(d_i @ d_i), ref + float(d_0 @ d_0)
    if own <= 0 or ref <= 0:
        return 0.0, 0.0
    return max(0.0, dot / (own * ref) ** 0.5), (ref / own) ** 0.5


@dataclass(frozen=True)
class FLTrust:
    """FLTrust's trust-weighted, norm-matched mean around a root update.

    >>> m = {"w": torch.zeros(2)}
    >>> root = lambda p: {"w": torch.tensor([1.0, 0.0])}
    >>> cs = [Contribution({"w": torch.tensor([2.0, 0.0])}, 5.0), Contribution({"w": torch.tensor([-9.0, 0.0])}, 1.0)]
    >>> FLTrust(root)(m, cs)["w"]   # the flipped update gets trust 0; the other is rescaled to norm 1
    tensor([1., 0.])

    Attributes:
        root_update: the server's root-set training (called once per aggregation).
    """

    root_update: RootUpdate

    def __call__(self, master: Params, contributions: Sequence[Contribution]) -> Params:
        reference = self.root_update(master)
        weighted = []
        for c in contributions:
            if c.weight <= 0:
                continue
            score, scale = trust(master, reference, c)
            weighted.append(Contribution(rescaled(master, c, scale).params, score, c.masks))
        return masked_weighted_average(master, weighted)
