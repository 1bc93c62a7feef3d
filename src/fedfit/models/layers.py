"""The pieces every width-scalable zoo model is built from: hidden sizes at a width, HeteroFL's
scaler and static batch-norm.

HeteroFL (Diao et al. 2021, "HeteroFL: Computation and Communication Efficient Federated
Learning for Heterogeneous Clients") adds two pieces, both here: the *scaler*, which divides a
hidden layer's output by the sub-model's width rate in training (identity in evaluation), and
*static batch-norm*: batch-norm layers that keep no running statistics while training (each
batch normalises itself); statistics are recomputed for evaluation on the finished model
(:mod:`fedfit.training.static_bn`).
"""

from __future__ import annotations

import math

import torch
from torch import nn


def scaled(units: int, width: float) -> int:
    """Hidden units kept at ``width``: ``ceil(units * width)``, at least 1."""
    return max(1, math.ceil(units * width))


class Scaler(nn.Module):
    """HeteroFL's scaler: ``x / rate`` in training, ``x`` in evaluation (no parameters).

    A sub-model at width rate r sums over r times the units of the master; dividing by r in
    training keeps its activations on the master's scale (Diao et al. 2021, section 3.2).
    """

    def __init__(self, rate: float = 1.0) -> None:
        super().__init__()
        self.rate = rate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / self.rate if self.training and self.rate != 1.0 else x


def norm2d(norm: str, channels: int, track_stats: bool) -> nn.Module:
    """Static batch-norm (no running statistics unless ``track_stats``), or identity."""
    if norm == "batch":
        return nn.BatchNorm2d(channels, momentum=None, track_running_stats=track_stats)
    return nn.Identity()
