"""The σ² probe: the per-sample gradient variance of a device's data, measured at the received model.

DYNAMITE's bound charges mini-batch noise σ²/b, σ² the per-sample gradient variance
``σ² = (1/D) Σ_j ‖∇f_j(w) − ∇F(w)‖²`` over the D samples a device holds. Reading it off the
change of consecutive rounds' pseudo-gradients mixes in curvature along the local paths
(bench/RESULTS.md, dyn14g); this probe measures it directly, from round 1.

At the first local step, before any update, the step's batch (the first ``b`` indices of a
uniform permutation of the D samples, as the trainer draws it) is split into its first
``a = ⌊b/2⌋`` and remaining ``b − a`` samples, and the two halves' mean gradients g_A, g_B are
taken at the received model. ``g_A − g_B = Σ_j w_j x_π(j)`` with ``x_j = ∇f_j``, weights
``1/a`` on A, ``−1/(b − a)`` on B and 0 elsewhere: finite-population sampling of a uniform
permutation gives (the formula :mod:`fedfit.policy.dynamite.sampling` uses; here ``Σ w_j = 0``,
so the mean term vanishes and ``w̄ = 0``)::

    E‖g_A − g_B‖² = σ² · D/(D − 1) · Σ_j w_j² = σ² · D/(D − 1) · (1/a + 1/(b − a))

so ``σ̂² = ‖g_A − g_B‖² · (D − 1)/D / (1/a + 1/(b − a))`` is unbiased, with no curvature or
path term (both halves are at the same model). Cost: one extra forward and backward of the
batch's b samples per task (two halves), the gradients taken with ``torch.autograd.grad`` so
the trainer's own gradients and its step are untouched; the model's buffers (batch-norm running
statistics) and torch's global RNG are put back afterwards, so the task trains exactly as
without the probe. Batches of one sample or a
device holding one sample cannot be split: ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import nn
from torch.nn import functional as F


#: Mean loss of a batch from the model's outputs and the labels.
Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def mean_gradient(model: nn.Module, params: list[nn.Parameter], x: torch.Tensor, y: torch.Tensor,
                  loss: Loss = F.cross_entropy, graph: bool = False) -> list[torch.Tensor]:
    """The gradient of ``loss`` over (x, y) for each of ``params`` (zeros for one it does not
    reach), through ``torch.autograd.grad``: the trainer's own gradients are untouched."""
    grads = torch.autograd.grad(loss(model(x), y), params, create_graph=graph, allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for g, p in zip(grads, params)]


def probe_scale(examples: int, batch: int) -> float:
    """E‖g_A − g_B‖² / σ² for a batch of ``batch`` drawn without replacement from ``examples``
    samples and split into ⌊batch/2⌋ and the rest.

    >>> probe_scale(2, 2)  # the two samples themselves: ‖x₁ − x₂‖² = 4σ²
    4.0
    >>> round(probe_scale(10, 5), 6)  # (1/2 + 1/3) · 10/9
    0.925926
    """
    a = batch // 2
    return (1 / a + 1 / (batch - a)) * examples / (examples - 1)


def probed_params(model: nn.Module, x: torch.Tensor, idx: torch.Tensor) -> list[nn.Parameter] | None:
    """The parameters a probe differentiates; ``None`` when the batch ``idx`` or the data ``x``
    cannot be split (one sample) or nothing is trained."""
    params = [p for p in model.parameters() if p.requires_grad]
    return params if len(idx) >= 2 and len(x) >= 2 and params else None


@contextmanager
def untouched(model: nn.Module) -> Iterator[None]:
    """Put the model's buffers (batch-norm running statistics) and torch's global RNG back as they
    were once the block is done, so a probe leaves the task to train exactly as without it."""
    buffers, rng = [b.clone() for b in model.buffers()], torch.get_rng_state()
    try:
        yield
    finally:
        with torch.no_grad():
            for live, saved in zip(model.buffers(), buffers):
                live.copy_(saved)
        torch.set_rng_state(rng)


def half_difference(model: nn.Module, params: list[nn.Parameter], x: torch.Tensor, y: torch.Tensor,
                    idx: torch.Tensor, loss: Loss = F.cross_entropy) -> list[torch.Tensor]:
    """u = g_A − g_B: the mean gradients of the batch ``idx``'s first ⌊b/2⌋ samples and the rest."""
    first, second = idx[:len(idx) // 2], idx[len(idx) // 2:]
    g_a = mean_gradient(model, params, x.index_select(0, first), y.index_select(0, first), loss)
    g_b = mean_gradient(model, params, x.index_select(0, second), y.index_select(0, second), loss)
    return [(a - b).detach() for a, b in zip(g_a, g_b)]


def sigma2_of(u: list[torch.Tensor], examples: int, batch: int) -> float:
    """σ̂² = ‖u‖² / :func:`probe_scale` (unbiased, see the module docstring)."""
    return sum(float(torch.sum(v ** 2)) for v in u) / probe_scale(examples, batch)


def half_batch_sigma2(model: nn.Module, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> float | None:
    """σ̂² from the batch ``idx`` of the device's data (x, y) at the model's current weights
    (unbiased, see the module docstring); ``None`` when the batch or the data cannot be split."""
    params = probed_params(model, x, idx)
    if params is None:
        return None
    with untouched(model):
        u = half_difference(model, params, x, y, idx)
    return sigma2_of(u, len(x), len(idx))
