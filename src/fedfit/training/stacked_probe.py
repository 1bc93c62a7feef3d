"""DYNAMITE's σ² probe for a cohort trained as one op: every probing device's σ̂² in one ``vmap``.

The one-by-one probe (:mod:`fedfit.training.probe`) splits a device's first batch of b samples
into its first ``a = ⌊b/2⌋`` and remaining ``b − a`` samples and takes the halves' mean
gradients g_A, g_B at the received model. Here the cohort's first step already holds every
device's first batch (the same indices, in the trainer's order, padded to the largest): the
difference g_A − g_B is the gradient of one signed sum

    Σ_j w_j · CE_j,   w_j = 1/a on A, −1/(b − a) on B, 0 on the padding,

(the gradient is linear in the weights), so one vectorised forward and backward of the probing
devices' batches at their starting parameters gives every difference at once; then, as alone,

    σ̂² = ‖g_A − g_B‖² / probe_scale(D, b).

It equals the one-by-one probe within float rounding (the same terms, summed in another order)
and touches neither the training step's gradients nor the optimiser. A device not asking, whose
first batch holds one sample, or holding one sample gets ``None``, as alone.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from fedfit.training.probe import probe_scale
from fedfit.types import Params

#: ``gradients(params, x, y, weight, n)`` → (each device's gradient of Σ w·CE / n, its loss).
Gradients = Callable[[Params, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
                     tuple[dict[str, torch.Tensor], torch.Tensor]]


def probe_weights(count: torch.Tensor, width: int) -> torch.Tensor:
    """``[G, width]`` signed weights of the half difference of G batches of ``count[g]`` ≥ 2
    samples, padded to ``width``.

    >>> probe_weights(torch.tensor([2.0, 5.0]), 5).tolist()  # halves {0}, {1}; {0, 1}, {2, 3, 4}
    [[1.0, -1.0, 0.0, 0.0, 0.0], [0.5, 0.5, -0.3333333432674408, -0.3333333432674408, -0.3333333432674408]]
    """
    b = count.unsqueeze(1)
    a = torch.floor(b / 2)
    position = torch.arange(width, dtype=count.dtype).unsqueeze(0)
    zero = torch.zeros(())
    return torch.where(position < a, 1.0 / a, torch.where(position < b, -1.0 / (b - a), zero))


def half_differences(gradients: Gradients, params: Params, x: torch.Tensor, y: torch.Tensor, count: torch.Tensor,
                     examples: torch.Tensor, probing: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The devices that take the probe, ``[K]`` indices into the G, and their g_A − g_B, ``[K, ...]``
    each (empty when none).

    Args:
        gradients: the cohort's vectorised gradient (:func:`fedfit.training.batched.train_cohort`'s).
        params: stacked starting parameters, ``[G, ...]`` each.
        x, y: the first step's padded batches, ``[G, B, ...]`` and ``[G, B]``.
        count: each device's first-batch size b, ``[G]`` (its samples lead its row).
        examples: the samples D each device holds, ``[G]``.
        probing: whether each device's plan asks for the probe, ``[G]`` booleans.
    """
    chosen = (probing & (count >= 2) & (examples >= 2)).nonzero().flatten()
    if len(chosen) == 0:
        return chosen, {}
    weight = probe_weights(count[chosen], x.shape[1])
    diffs, _ = gradients({n: p[chosen] for n, p in params.items()}, x[chosen], y[chosen], weight,
                         torch.ones(len(chosen)))
    return chosen, diffs


def sigma2_of(chosen: torch.Tensor, diffs: dict[str, torch.Tensor], count: torch.Tensor,
              examples: torch.Tensor) -> list[float | None]:
    """σ̂² of each of the G devices (``len(count)``) from :func:`half_differences`' result, ``None``
    for a device not among ``chosen``."""
    estimates: list[float | None] = [None] * len(count)
    if len(chosen) == 0:
        return estimates
    squared = sum((diff.flatten(1) ** 2).sum(1).double() for diff in diffs.values())
    assert isinstance(squared, torch.Tensor)
    for g, value in zip(chosen.tolist(), squared.tolist(), strict=True):
        estimates[g] = value / probe_scale(int(examples[g]), int(count[g]))
    return estimates


def cohort_sigma2(gradients: Gradients, params: Params, x: torch.Tensor, y: torch.Tensor, count: torch.Tensor,
                  examples: torch.Tensor, probing: torch.Tensor) -> list[float | None]:
    """σ̂² of each of G devices from its first batch, or ``None`` (the arguments are
    :func:`half_differences`'): for a device not asking or that cannot split its batch or data."""
    chosen, diffs = half_differences(gradients, params, x, y, count, examples, probing)
    return sigma2_of(chosen, diffs, count, examples)
