"""Grouped (depthwise) convolutions' backward FLOPs are counted with their groups."""

from __future__ import annotations

import pytest
import torch

from fedfit.cost.flops import flop_counter


@pytest.mark.parametrize("groups", [1, 4, 64])
def test_a_convs_backward_costs_twice_its_forward_at_any_groups(groups: int) -> None:
    conv = torch.nn.Conv2d(64, 64, 3, padding=1, groups=groups, bias=False)
    x = torch.randn(1, 64, 10, 10, requires_grad=True)
    forward = 2 * 64 * (64 // groups) * 9 * 100  # multiply-adds of 64 outputs x 100 pixels x (64/g)·9 taps
    with flop_counter() as fwd:
        y = conv(x)
    with flop_counter() as bwd:
        y.sum().backward()
    assert fwd.get_total_flops() == forward
    assert bwd.get_total_flops() == 2 * forward  # input gradient + weight gradient, each a forward's worth
