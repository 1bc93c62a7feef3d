"""The zoo's small networks: logistic regression, an MLP, a CNN for square images and a 1-D CNN
for sensor windows, each declaring its hidden-dimension groups (``width_groups()``) for the
coordinate maps of :mod:`fedfit.models.coordinates`."""

from __future__ import annotations

import torch
from torch import nn

from fedfit.models.coordinates import AxisRef, WidthGroup, layer_inputs, layer_outputs
from fedfit.models.layers import Scaler, norm2d, scaled


class LogisticRegression(nn.Module):
    """Multinomial logistic regression (``width`` has no hidden layer to scale)."""

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.flatten(1))

    def width_groups(self) -> tuple[WidthGroup, ...]:
        """No hidden dimension: nothing to slice."""
        return ()


class MLP(nn.Module):
    """Two hidden ReLU layers (200 units each at width 1, as in McMahan et al. 2017)."""

    def __init__(self, in_features: int, num_classes: int, width: float = 1.0, hidden: int = 200,
                 rate: float = 1.0):
        super().__init__()
        h = scaled(hidden, width)
        self.fc1 = nn.Linear(in_features, h)
        self.fc2 = nn.Linear(h, h)
        self.fc3 = nn.Linear(h, num_classes)
        self.scaler = Scaler(rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.scaler(self.fc1(x.flatten(1))))
        x = torch.relu(self.scaler(self.fc2(x)))
        return self.fc3(x)

    def width_groups(self) -> tuple[WidthGroup, ...]:
        """The two hidden layers' units."""
        return (
            WidthGroup("fc1", self.fc1.out_features, (*layer_outputs("fc1", self.fc1), *layer_inputs("fc2", self.fc2))),
            WidthGroup("fc2", self.fc2.out_features, (*layer_outputs("fc2", self.fc2), *layer_inputs("fc3", self.fc3))),
        )


class CNN(nn.Module):
    """Two 5×5 conv layers (16, 32 channels at width 1) with max-pooling, then 128 → classes.

    A smaller cousin of McMahan et al.'s FedAvg CNN, sized so a 2-core host trains a fleet
    in minutes. Works on any square input whose side is divisible by 4 (28×28, 8×8).
    ``norm="batch"`` puts a static batch-norm after each conv (conv → scaler → norm → ReLU → pool,
    as HeteroFL, whose scaler always precedes a norm; fc1 has none, so no scaler);
    ``track_norm_stats`` builds the evaluation twin that holds running statistics.
    """

    def __init__(self, in_channels: int, side: int, num_classes: int, width: float = 1.0, *,
                 rate: float = 1.0, norm: str = "none", track_norm_stats: bool = False) -> None:
        super().__init__()
        c1, c2, h = scaled(16, width), scaled(32, width), scaled(128, width)
        self.conv1 = nn.Conv2d(in_channels, c1, 5, padding=2)
        self.norm1 = norm2d(norm, c1, track_norm_stats)
        self.conv2 = nn.Conv2d(c1, c2, 5, padding=2)
        self.norm2 = norm2d(norm, c2, track_norm_stats)
        self.fc1 = nn.Linear(c2 * (side // 4) ** 2, h)
        self.fc2 = nn.Linear(h, num_classes)
        self.scaler = Scaler(rate)
        self._pixels = (side // 4) ** 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.max_pool2d(torch.relu(self.norm1(self.scaler(self.conv1(x)))), 2)
        x = torch.max_pool2d(torch.relu(self.norm2(self.scaler(self.conv2(x)))), 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)

    def _outputs(self, conv: str, norm: str) -> tuple[AxisRef, ...]:
        norm_module = getattr(self, norm)
        extra = layer_outputs(norm, norm_module) if not isinstance(norm_module, nn.Identity) else ()
        return (*layer_outputs(conv, getattr(self, conv)), *extra)

    def width_groups(self) -> tuple[WidthGroup, ...]:
        """Channels of conv1 and conv2 (with their norms) and the units of fc1."""
        return (
            WidthGroup("conv1", self.conv1.out_channels,
                       (*self._outputs("conv1", "norm1"), *layer_inputs("conv2", self.conv2))),
            WidthGroup("conv2", self.conv2.out_channels,
                       (*self._outputs("conv2", "norm2"), *layer_inputs("fc1", self.fc1, self._pixels))),
            WidthGroup("fc1", self.fc1.out_features, (*layer_outputs("fc1", self.fc1), *layer_inputs("fc2", self.fc2))),
        )


class CNN1D(nn.Module):
    """A tinyML 1-D convnet for raw sensor windows: two 7-tap conv layers (6, 12 channels at
    width 1), each followed by ReLU and max-pooling by 4, then a linear classifier.

    Sized for a 512 KB microcontroller (3,640 parameters on 1,024-sample windows). Works on any
    input ``(channels, length)`` with ``length`` divisible by 16.
    """

    def __init__(self, in_channels: int, length: int, num_classes: int, width: float = 1.0) -> None:
        super().__init__()
        c1, c2 = scaled(6, width), scaled(12, width)
        self.conv1 = nn.Conv1d(in_channels, c1, 7, padding=3)
        self.conv2 = nn.Conv1d(c1, c2, 7, padding=3)
        self.fc = nn.Linear(c2 * (length // 16), num_classes)
        self._steps = length // 16

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # no norm, so no scaler (as the CNN's fc1)
        x = torch.max_pool1d(torch.relu(self.conv1(x)), 4)
        x = torch.max_pool1d(torch.relu(self.conv2(x)), 4)
        return self.fc(x.flatten(1))

    def width_groups(self) -> tuple[WidthGroup, ...]:
        """Channels of conv1 and conv2."""
        return (
            WidthGroup("conv1", self.conv1.out_channels,
                       (*layer_outputs("conv1", self.conv1), *layer_inputs("conv2", self.conv2))),
            WidthGroup("conv2", self.conv2.out_channels,
                       (*layer_outputs("conv2", self.conv2), *layer_inputs("fc", self.fc, self._steps))),
        )
