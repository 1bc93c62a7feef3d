"""DYNAMITE's curvature probe for a cohort trained as one op: every device's uᵀHu/‖u‖² at once.

The one-by-one probe (:mod:`fedfit.training.curvature_probe`) takes, at the received model, the
Hessian-vector product of the mean loss over the epoch's next batch along the σ² probe's
direction u = g_A − g_B, and reports β_σ = uᵀHu/‖u‖². In the cohort op the probing devices'
parameters are stacked, and device g's parameters reach only its own loss L_g, so the Hessian of
the summed losses Σ_g L_g is block diagonal with device g's Hessian H_g as its g-th block. Hence
one double backward of that sum gives every product at once:

    ∇_g Σ L = ∇L_g,   ∇_g ⟨∇Σ L, u⟩ = ∇_g Σ_h ⟨∇L_h, u_h⟩ = H_g u_g,

(exact, no finite difference), with each device's next batch padded to the largest with samples of
weight 0 (they add nothing to loss, gradient or Hessian). The models batched hold no buffers and
draw no random numbers (:func:`fedfit.training.batched.batchable_model`), so, unlike the one-by-one
probe, there is nothing to put back; nothing here touches the training step's gradients.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from fedfit.types import Params

#: ``losses(params, x, y, weight, n)`` → each device's Σ w·CE / n over its padded batch, ``[G]``,
#: differentiable in the stacked ``params`` (:func:`fedfit.training.batched.train_cohort`'s ``vmap``).
Losses = Callable[[Params, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def _hessian_products(losses: Losses, params: Params, u: dict[str, torch.Tensor], x: torch.Tensor,
                      y: torch.Tensor, weight: torch.Tensor, count: torch.Tensor) -> dict[str, torch.Tensor]:
    """Each device's H_g u_g (zeros where the gradient does not depend on a weight)."""
    leaves = {name: t.detach().requires_grad_() for name, t in params.items()}
    inputs = list(leaves.values())
    with torch.enable_grad():
        total = losses(leaves, x, y, weight, count).sum()
        grads = torch.autograd.grad(total, inputs, create_graph=True, allow_unused=True)
        along = sum(((g * u[name]).sum() for name, g in zip(leaves, grads, strict=True) if g is not None),
                    torch.zeros(()))
        products = torch.autograd.grad(along, inputs, allow_unused=True) if along.requires_grad else \
            (None,) * len(inputs)
    return {name: torch.zeros_like(p) if h is None else h
            for (name, p), h in zip(leaves.items(), products, strict=True)}


def cohort_curvature(losses: Losses, params: Params, u: dict[str, torch.Tensor], x: torch.Tensor,
                     y: torch.Tensor, weight: torch.Tensor, count: torch.Tensor) -> list[float | None]:
    """β_σ = uᵀHu/‖u‖² of each of K devices, ``None`` where its u is 0 (as one by one; the cohort's
    u being one signed sum's gradient, halves with equal gradients may leave rounding, ~1e-15,
    where one by one subtracts two equal gradients to exactly 0).

    Args:
        losses: the cohort's vectorised loss.
        params: the K devices' stacked starting parameters, ``[K, ...]`` each.
        u: their σ² probe directions g_A − g_B, ``[K, ...]`` each.
        x, y: their next batches, padded, ``[K, B, ...]`` and ``[K, B]``.
        weight: 1 on a device's samples, 0 on the padding, ``[K, B]``.
        count: each device's next-batch size, ``[K]`` (≥ 1).
    """
    products = _hessian_products(losses, params, u, x, y, weight, count)
    quadratic = sum((u[name] * h).flatten(1).sum(1).double() for name, h in products.items())
    squared = sum((v * v).flatten(1).sum(1).double() for v in u.values())
    assert isinstance(quadratic, torch.Tensor) and isinstance(squared, torch.Tensor)
    return [q / s if s > 0 else None for q, s in zip(quadratic.tolist(), squared.tolist(), strict=True)]
