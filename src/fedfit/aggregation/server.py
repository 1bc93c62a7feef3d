"""Server steps: how the master model moves toward an aggregate.

Every server rule here is one move along the aggregate's direction::

    x ← x + η · (x̄ − x)

* FedAvg: η = 1 (the master becomes the average);
* FedBuff's server learning rate η_g (Nguyen et al. 2022, "Federated Learning with Buffered
  Asynchronous Aggregation", Alg. 1), times the mean staleness discount of the buffer;
* FedAsync's mixing x ← (1 − α_t)·x + α_t·x_new with α_t = α·s(t − τ) (Xie et al. 2019) — the
  same move with η = α_t and x̄ = x_new;
* FedNova's rescaling by τ_eff (Wang et al. 2020): η = τ_eff when x̄ averages normalised updates.

Factors compose by multiplication (:func:`server_scale`), never by subclassing.
"""

from __future__ import annotations

import torch

from fedfit.types import Params


def server_step(master: Params, aggregate: Params, scale: float) -> Params:
    """``master + scale · (aggregate − master)`` for every floating tensor.

    Non-float entries come from ``aggregate``. ``scale == 1`` returns ``aggregate`` itself
    (plain FedAvg, bit for bit).

    >>> server_step({"w": torch.tensor([0.0])}, {"w": torch.tensor([4.0])}, 0.25)["w"]
    tensor([1.])
    """
    if scale == 1.0:
        return aggregate
    out: Params = {}
    for name, old in master.items():
        new = aggregate[name]
        if not old.is_floating_point():
            out[name] = new
            continue
        moved = old.to(torch.float64) + scale * (new.to(torch.float64) - old.to(torch.float64))
        out[name] = moved.to(old.dtype)
    return out


def server_scale(*, server_lr: float, weights: list[float], discounts: list[float],
                 tau_eff: float = 1.0) -> float:
    """The combined step size η = server_lr · mean discount · τ_eff.

    The mean discount is weighted by the updates' base weights: Σ w_i s_i / Σ w_i, so a
    buffer of fresh updates moves the full ``server_lr`` and a stale one less (FedBuff's
    Σ s_i Δ_i up to the normalisation the masked average already does).

    Args:
        server_lr: the server learning rate (FedBuff η_g, FedAsync α; 1 for FedAvg).
        weights: base weights w_i of the updates.
        discounts: staleness discounts s_i of the same updates.
        tau_eff: FedNova's effective steps (1 when not normalising).
    """
    total = sum(weights)
    mean = sum(w * s for w, s in zip(weights, discounts, strict=True)) / total if total > 0 else 1.0
    return server_lr * mean * tau_eff
