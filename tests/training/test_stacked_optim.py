"""The stacked optimiser: parameters laid out as their gradients, the same arithmetic either way."""

from __future__ import annotations

import torch

from fedfit.training.optimizers import OptimizerConfig
from fedfit.training.stacked_optim import StackedOptimizer


def test_parameters_take_their_gradients_layout_and_step_the_same() -> None:
    """A linear layer's stacked weight gradient comes transposed in memory (strides (·, 1, out));
    the stacked weight is copied into that layout at the first step, so the update walks both
    contiguously, and the values are those of the plain SGD-with-momentum formula."""
    gen = torch.Generator().manual_seed(0)
    start = {"w": torch.randn(3, 4, 5, generator=gen)}
    grads = [torch.randn(3, 5, 4, generator=gen).transpose(1, 2) for _ in range(2)]
    opt = StackedOptimizer(start, 0.5, OptimizerConfig(momentum=0.9))
    active = torch.tensor([True, False, True])
    for g in grads:
        params = opt.step({"w": g}, active=active)
    assert params["w"].stride() == grads[0].stride() and torch.equal(start["w"], start["w"].contiguous())
    buffer = grads[0] * 0.9 + grads[1]  # momentum: b₁ = g₁, b₂ = 0.9·b₁ + g₂
    expected = start["w"] - 0.5 * grads[0] - 0.5 * buffer
    assert torch.allclose(params["w"][active], expected[active], atol=1e-6)
    assert torch.equal(params["w"][1], start["w"][1])  # the idle device kept its parameters
