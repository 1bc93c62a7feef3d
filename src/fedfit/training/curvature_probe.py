"""The curvature probe: how curved a device's loss is along its mini-batch noise.

DYNAMITE's ``noise_model: curvature`` (:mod:`fedfit.policy.dynamite.curvature`) prices the noise
a round ends with, which depends on how fast local steps forget earlier batches' noise: the
curvature λ of the loss along the noise directions. The σ² probe (:mod:`fedfit.training.probe`)
takes the mean gradients g_A, g_B of the first batch's two halves at the received model; their
difference ``u = g_A − g_B`` is a draw of the noise itself (mean 0, covariance ∝ that of the
per-sample gradients). This probe adds one Hessian-vector product along it, the Rayleigh
quotient::

    β_σ = uᵀ H u / ‖u‖²

H being the Hessian of the mean loss over the *next* batch's samples of the task's first epoch
(disjoint from the halves, so a sample's own Hessian does not weigh its own gradient direction
more than the data's; the first batch itself when the device holds nothing else). It is an
unbiased sample of the device's full-data Hessian along u. Cost: one forward and backward of
those samples with the graph kept, then the backward of ⟨∇L, u⟩ through it (charged as two more
passes of the batch by :func:`fedfit.cost.time.task_cost`). The model's buffers and torch's
global RNG are put back, so the task trains exactly as without the probe.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from fedfit.training.probe import Loss, half_difference, mean_gradient, probed_params, sigma2_of, untouched


def _rayleigh(model: nn.Module, params: list[nn.Parameter], x: torch.Tensor, y: torch.Tensor,
              u: list[torch.Tensor], loss: Loss) -> float | None:
    """uᵀ H u / ‖u‖² with H the Hessian of ``loss`` over (x, y); ``None`` when u is 0."""
    norm = sum(float(torch.sum(v * v)) for v in u)
    if norm <= 0:
        return None
    grads = mean_gradient(model, params, x, y, loss, graph=True)
    along = sum((torch.sum(g * v) for g, v in zip(grads, u)), torch.zeros(()))
    if not along.requires_grad:  # the gradient does not depend on the weights: no curvature
        return 0.0
    hu = torch.autograd.grad(along, params, allow_unused=True)
    return sum(float(torch.sum(v * h)) for v, h in zip(u, hu) if h is not None) / norm


def half_batch_probe(model: nn.Module, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor, other: torch.Tensor,
                     loss: Loss = F.cross_entropy) -> tuple[float | None, float | None]:
    """(σ̂², β̂_σ) at the model's current weights: σ² from the batch ``idx`` split in halves
    (exactly :func:`fedfit.training.probe.half_batch_sigma2`'s), β_σ along their gradients'
    difference with the Hessian over the samples ``other``; ``None`` where the batch or the
    data cannot be split (or the halves' gradients agree: no direction).

    Args:
        model: the model at the received weights.
        x, y: the device's data.
        idx: the first step's batch.
        other: the samples whose mean loss's Hessian is taken (the next batch of the epoch).
        loss: the mean loss of a batch (cross-entropy, as the trainer's).
    """
    params = probed_params(model, x, idx)
    if params is None:
        return None, None
    with untouched(model):
        u = half_difference(model, params, x, y, idx, loss)
        curvature = _rayleigh(model, params, x.index_select(0, other), y.index_select(0, other), u, loss)
    return sigma2_of(u, len(x), len(idx)), curvature
