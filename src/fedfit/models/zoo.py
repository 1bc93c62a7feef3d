"""Width-scalable model zoo: logistic regression, MLP, and a small CNN for 28×28 images.

Every builder takes ``width`` (a multiplier of the hidden sizes; 1.0 is the full model) so that
sub-models of a master model are the same architecture with fewer hidden units. Input and output
sizes never scale.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from fedfit.errors import ConfigError


def scaled(units: int, width: float) -> int:
    """Hidden units kept at ``width``: ``ceil(units * width)``, at least 1."""
    return max(1, math.ceil(units * width))


class LogisticRegression(nn.Module):
    """Multinomial logistic regression (``width`` has no hidden layer to scale)."""

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.flatten(1))


class MLP(nn.Module):
    """Two hidden ReLU layers (200 units each at width 1, as in McMahan et al. 2017)."""

    def __init__(self, in_features: int, num_classes: int, width: float = 1.0, hidden: int = 200):
        super().__init__()
        h = scaled(hidden, width)
        self.fc1 = nn.Linear(in_features, h)
        self.fc2 = nn.Linear(h, h)
        self.fc3 = nn.Linear(h, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc1(x.flatten(1)))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


class CNN(nn.Module):
    """Two 5×5 conv layers (16, 32 channels at width 1) with max-pooling, then 128 → classes.

    A smaller cousin of McMahan et al.'s FedAvg CNN, sized so a 2-core host trains a fleet
    in minutes. Works on any square input whose side is divisible by 4 (28×28, 8×8).
    """

    def __init__(self, in_channels: int, side: int, num_classes: int, width: float = 1.0) -> None:
        super().__init__()
        c1, c2, h = scaled(16, width), scaled(32, width), scaled(128, width)
        self.conv1 = nn.Conv2d(in_channels, c1, 5, padding=2)
        self.conv2 = nn.Conv2d(c1, c2, 5, padding=2)
        self.fc1 = nn.Linear(c2 * (side // 4) ** 2, h)
        self.fc2 = nn.Linear(h, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.max_pool1d(torch.relu(self.conv1(x)), 4)
        x = torch.max_pool1d(torch.relu(self.conv2(x)), 4)
        return self.fc(x.flatten(1))


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """Everything needed to rebuild a model in any process: name, shapes and width."""

    name: str
    input_shape: tuple[int, ...]
    num_classes: int
    width: float = 1.0

    def build(self, width: float | None = None) -> nn.Module:
        """A freshly initialised module (at ``width``, default the spec's own)."""
        return build_model(self.name, self.input_shape, self.num_classes, width or self.width)


def _logreg(shape: tuple[int, ...], classes: int, width: float) -> nn.Module:
    return LogisticRegression(math.prod(shape), classes)


def _mlp(shape: tuple[int, ...], classes: int, width: float) -> nn.Module:
    return MLP(math.prod(shape), classes, width)


def _cnn(shape: tuple[int, ...], classes: int, width: float) -> nn.Module:
    if len(shape) != 3 or shape[1] != shape[2] or shape[1] % 4:
        raise ConfigError(f"model.name: cnn needs square images with side divisible by 4, got input {shape}")
    return CNN(shape[0], shape[1], classes, width)


def _cnn1d(shape: tuple[int, ...], classes: int, width: float) -> nn.Module:
    if len(shape) != 2 or shape[1] % 16:
        raise ConfigError(f"model.name: cnn1d needs (channels, length) with length divisible by 16, got {shape}")
    return CNN1D(shape[0], shape[1], classes, width)


MODELS: dict[str, Callable[[tuple[int, ...], int, float], nn.Module]] = {
    "logreg": _logreg,
    "mlp": _mlp,
    "cnn": _cnn,
    "cnn1d": _cnn1d,
}


def build_model(name: str, input_shape: tuple[int, ...], num_classes: int, width: float = 1.0) -> nn.Module:
    """Build a zoo model.

    Args:
        name: ``logreg``, ``mlp``, ``cnn`` or ``cnn1d``.
        input_shape: one sample's shape, e.g. ``(1, 28, 28)`` or ``(60,)``.
        num_classes: output classes.
        width: hidden-size multiplier in (0, 1].

    Raises:
        ConfigError: unknown name, bad width, or an input the model cannot take.
    """
    if name not in MODELS:
        raise ConfigError(f"model.name: unknown model '{name}' (known: {', '.join(MODELS)})")
    if not 0.0 < width <= 1.0:
        raise ConfigError(f"model.width: must be in (0, 1], got {width}")
    return MODELS[name](tuple(input_shape), num_classes, width)
