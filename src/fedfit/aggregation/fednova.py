"""FedNova: normalised averaging of heterogeneous local work.

Wang, Liu, Liang, Joshi and Poor 2020, "Tackling the Objective Inconsistency Problem in
Heterogeneous Federated Optimization" (NeurIPS). Device i runs τ_i local steps; its update
x − x_i = η Σ_j a_{i,j} g_{i,j} is divided by ‖a_i‖₁, the normalised directions are averaged
with data weights p_i, and the average is rescaled by τ_eff = Σ_i p_i ‖a_i‖₁::

    x ← x − τ_eff · Σ_i p_i (x − x_i) / ‖a_i‖₁

In fedfit's single masked weighted average this is: contribute y_i = x − (x − x_i)/‖a_i‖₁ with
weight p_i (so the average is x − Σ p_i d_i), then take a server step of size τ_eff
(:func:`fedfit.aggregation.server.server_step`). ‖a_i‖₁ for the three local solvers:

* plain SGD: ‖a‖₁ = τ;
* SGD with momentum ρ: a_j = (1 − ρ^(τ−j))/(1 − ρ);
* proximal (FedProx μ, learning rate η): a_j = (1 − ημ)^(τ−1−j).

Both follow the recursion of the authors' optimiser (counter c ← ρc + 1; norm ← (1−ημ)·norm + c).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from fedfit.types import Params


@dataclass(frozen=True, slots=True)
class LocalSolver:
    """What shaped the local steps: momentum ρ and the proximal product η·μ (0: none)."""

    momentum: float = 0.0
    lr_mu: float = 0.0


def normalising_length(steps: int, solver: LocalSolver = LocalSolver()) -> float:
    """‖a‖₁ of ``steps`` local steps under ``solver`` (``steps`` for plain SGD).

    >>> normalising_length(4)
    4.0
    >>> normalising_length(2, LocalSolver(momentum=0.5))  # a = (1.5, 1)
    2.5
    """
    counter, norm = 0.0, 0.0
    for _ in range(steps):
        counter = solver.momentum * counter + 1.0
        norm = (1.0 - solver.lr_mu) * norm + counter
    return norm


def normalised_params(master: Params, params: Params, length: float) -> Params:
    """y = x − (x − x_i)/‖a_i‖₁: the device's move scaled back to one effective step.

    Non-float entries are passed through from ``params``.
    """
    out: Params = {}
    for name, new in params.items():
        old = master[name]
        if not new.is_floating_point() or length <= 0:
            out[name] = new
            continue
        delta = (old.to(torch.float64) - new.to(torch.float64)) / length
        out[name] = (old.to(torch.float64) - delta).to(new.dtype)
    return out


def effective_steps(weights: Sequence[float], lengths: Sequence[float]) -> float:
    """τ_eff = Σ p_i ‖a_i‖₁ with p_i = w_i / Σ w (1.0 when there are no weights)."""
    total = sum(weights)
    if total <= 0:
        return 1.0
    return sum(w * n for w, n in zip(weights, lengths, strict=True)) / total
