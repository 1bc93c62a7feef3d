"""A stacked-LSTM classifier (Hochreiter & Schmidhuber 1997) for sequences and image rows.

An input of one sample's shape ``(C, H, W)`` is read as ``H`` steps of ``C·W`` features (the
row-by-row reading of an image, as in the pixel-sequence benchmarks), ``(S, F)`` as ``S`` steps
of ``F`` features and ``(L,)`` as ``L`` steps of one feature. Two LSTM layers (64 hidden units at
width 1), the last step's hidden state, a linear head. The module's children in order are its
forward, so its stages are derived: ``[steps, lstm1]``, ``[lstm2]``, ``[head]``. An LSTM's
gate-blocked weights have no width groups here: the model trains at full width only.
"""

from __future__ import annotations

import torch
from torch import nn

from fedfit.models.coordinates import WidthGroup
from fedfit.models.layers import scaled


class Steps(nn.Module):
    """``(batch, *shape)`` → ``(batch, steps, features)`` as the module docstring reads it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 2:
            return x.unsqueeze(-1)
        if x.dim() == 4:
            return x.permute(0, 2, 1, 3).flatten(2)
        return x


class Recurrent(nn.Module):
    """One LSTM layer: the whole output sequence, or only its last step."""

    def __init__(self, features: int, hidden: int, last_only: bool) -> None:
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True)
        self.last_only = last_only

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return out[:, -1] if self.last_only else out


class LSTMClassifier(nn.Module):
    """Two stacked LSTM layers and a linear head."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, width: float = 1.0, hidden: int = 64) -> None:
        super().__init__()
        features = input_shape[0] * input_shape[2] if len(input_shape) == 3 else (
            input_shape[1] if len(input_shape) == 2 else 1)
        h = scaled(hidden, width)
        self.steps = Steps()
        self.lstm1 = Recurrent(features, h, last_only=False)
        self.lstm2 = Recurrent(h, h, last_only=True)
        self.head = nn.Linear(h, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.lstm2(self.lstm1(self.steps(x))))

    def width_groups(self) -> tuple[WidthGroup, ...]:
        """None: the LSTM is not sliced."""
        return ()
