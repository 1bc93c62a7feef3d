"""User-side modules and loaders for the tests: what a user's own package would hold."""

from __future__ import annotations

import torch
from torch import nn


def tiny_mlp(input_shape: tuple[int, ...], num_classes: int, hidden: int = 8) -> nn.Module:
    """A sequential MLP: three stages (fc, fc, head)."""
    size = 1
    for s in input_shape:
        size *= s
    return nn.Sequential(nn.Flatten(), nn.Linear(size, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, num_classes))


class SkipAcross(nn.Module):
    """Its forward adds the first child's output to the second's: children in order are not it."""

    def __init__(self, features: int, num_classes: int) -> None:
        super().__init__()
        self.a = nn.Linear(features, features)
        self.b = nn.Linear(features, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        return self.b(h + x)


def skip_across(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    return SkipAcross(input_shape[0], num_classes)


def blobs(n: int = 240, features: int = 6, classes: int = 3, seed: int = 0) -> tuple[tuple[torch.Tensor, torch.Tensor], ...]:
    """Gaussian blobs, one per class: (train, test) as tensor pairs."""
    gen = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % classes
    centres = torch.randn(classes, features, generator=gen) * 3
    x = centres[y] + torch.randn(n, features, generator=gen)
    cut = n * 3 // 4
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])
