"""Width-scalable model zoo: logistic regression, MLP, and a small CNN for 28×28 images.

Every builder takes ``width`` (a multiplier of the hidden sizes; 1.0 is the full model) so that
sub-models of a master model are the same architecture with fewer hidden units. Input and output
sizes never scale. Each model declares its hidden-dimension groups (``width_groups()``) for the
coordinate maps of :mod:`fedfit.models.coordinates`.

HeteroFL (Diao et al. 2021, "HeteroFL: Computation and Communication Efficient Federated
Learning for Heterogeneous Clients") adds two pieces, both here: the *scaler*, which divides a
hidden layer's output by the sub-model's width rate in training (identity in evaluation), and
*static batch-norm*: batch-norm layers that keep no running statistics while training (each
batch normalises itself); statistics are recomputed for evaluation on the finished model
(:mod:`fedfit.training.static_bn`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from fedfit.errors import ConfigError
from fedfit.models.custom import ModelFactory
from fedfit.models.coordinates import AxisRef, WidthGroup, layer_inputs, layer_outputs

NORMS = ("none", "batch")


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


def _norm2d(norm: str, channels: int, track_stats: bool) -> nn.Module:
    """Static batch-norm (no running statistics unless ``track_stats``), or identity."""
    if norm == "batch":
        return nn.BatchNorm2d(channels, momentum=None, track_running_stats=track_stats)
    return nn.Identity()


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
        self.norm1 = _norm2d(norm, c1, track_norm_stats)
        self.conv2 = nn.Conv2d(c1, c2, 5, padding=2)
        self.norm2 = _norm2d(norm, c2, track_norm_stats)
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


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """Everything needed to rebuild a model in any process: name, shapes, width and options.

    Attributes:
        name: zoo model name.
        input_shape: one sample's shape.
        num_classes: output classes.
        width: the master model's width multiplier.
        norm: ``none`` or ``batch`` (static batch-norm, CNN only).
        scaler: whether sub-models divide hidden outputs by their width rate in training (meant
            for use with ``norm="batch"``, as HeteroFL; without a norm it amplifies activations).
        factory: the user's model builder (:mod:`fedfit.models.custom`); ``None``: the zoo's ``name``.
    """

    name: str
    input_shape: tuple[int, ...]
    num_classes: int
    width: float = 1.0
    norm: str = "none"
    scaler: bool = False
    factory: ModelFactory | None = None

    def build(self, rate: float | None = None, *, track_norm_stats: bool = False) -> nn.Module:
        """A freshly initialised module: the master (``rate`` 1 or ``None``) or a sub-model.

        Args:
            rate: the sub-model's width relative to the master's (in (0, 1]); its hidden sizes
                are those of width ``self.width * rate``.
            track_norm_stats: build batch-norms with running statistics (the evaluation twin).
        """
        r = 1.0 if rate is None else rate
        if self.factory is not None:
            return self.factory.build(self.input_shape, self.num_classes, self.width * r)
        return build_model(self.name, self.input_shape, self.num_classes, self.width * r,
                           rate=r if self.scaler else 1.0, norm=self.norm, track_norm_stats=track_norm_stats)


@dataclass(frozen=True, slots=True)
class _Options:
    rate: float
    norm: str
    track_norm_stats: bool


def _no_norm(name: str, options: _Options) -> None:
    if options.norm != "none":
        raise ConfigError(f"model.norm: '{options.norm}' is available for cnn, resnet and mobilenetv2 only, not {name}")


def _logreg(shape: tuple[int, ...], classes: int, width: float, options: _Options) -> nn.Module:
    _no_norm("logreg", options)
    return LogisticRegression(math.prod(shape), classes)


def _mlp(shape: tuple[int, ...], classes: int, width: float, options: _Options) -> nn.Module:
    _no_norm("mlp", options)
    return MLP(math.prod(shape), classes, width, rate=options.rate)


def _cnn(shape: tuple[int, ...], classes: int, width: float, options: _Options) -> nn.Module:
    if len(shape) != 3 or shape[1] != shape[2] or shape[1] % 4:
        raise ConfigError(f"model.name: cnn needs square images with side divisible by 4, got input {shape}")
    return CNN(shape[0], shape[1], classes, width, rate=options.rate, norm=options.norm,
               track_norm_stats=options.track_norm_stats)


def _cnn1d(shape: tuple[int, ...], classes: int, width: float, options: _Options) -> nn.Module:
    _no_norm("cnn1d", options)
    if len(shape) != 2 or shape[1] % 16:
        raise ConfigError(f"model.name: cnn1d needs (channels, length) with length divisible by 16, got {shape}")
    return CNN1D(shape[0], shape[1], classes, width)


def _resnet(blocks_per_level: int) -> Callable[[tuple[int, ...], int, float, _Options], nn.Module]:
    def build(shape: tuple[int, ...], classes: int, width: float, options: _Options) -> nn.Module:
        from fedfit.models.resnet import ResNet  # resnet builds on this module's pieces
        if len(shape) != 3 or min(shape[1:]) < 4:
            raise ConfigError(f"model.name: resnet needs images (channels, height, width) of side >= 4, got {shape}")
        return ResNet(shape[0], classes, blocks_per_level, width, rate=options.rate, norm=options.norm,
                      track_norm_stats=options.track_norm_stats)
    return build


def _mobilenetv2(shape: tuple[int, ...], classes: int, width: float, options: _Options) -> nn.Module:
    from fedfit.models.mobilenet import MobileNetV2  # mobilenet builds on this module's pieces
    if len(shape) != 3 or min(shape[1:]) < 64:
        raise ConfigError(f"model.name: mobilenetv2 needs images (channels, height, width) of side >= 64, got {shape}")
    return MobileNetV2(shape[0], classes, width, rate=options.rate, norm=options.norm,
                       track_norm_stats=options.track_norm_stats)


def _lstm(shape: tuple[int, ...], classes: int, width: float, options: _Options) -> nn.Module:
    from fedfit.models.sequence import LSTMClassifier  # sequence builds on this module's pieces
    _no_norm("lstm", options)
    if len(shape) not in (1, 2, 3):
        raise ConfigError(f"model.name: lstm needs (steps,), (steps, features) or (C, H, W) inputs, got {shape}")
    return LSTMClassifier(shape, classes, width)


MODELS: dict[str, Callable[[tuple[int, ...], int, float, _Options], nn.Module]] = {
    "logreg": _logreg,
    "mlp": _mlp,
    "cnn": _cnn,
    "cnn1d": _cnn1d,
    "resnet8": _resnet(1),
    "resnet20": _resnet(3),
    "lstm": _lstm,
    "mobilenetv2": _mobilenetv2,
}


def build_model(name: str, input_shape: tuple[int, ...], num_classes: int, width: float = 1.0, *,
                rate: float = 1.0, norm: str = "none", track_norm_stats: bool = False) -> nn.Module:
    """Build a zoo model.

    Args:
        name: ``logreg``, ``mlp``, ``cnn``, ``cnn1d``, ``resnet8``, ``resnet20``, ``lstm`` or ``mobilenetv2``.
        input_shape: one sample's shape, e.g. ``(1, 28, 28)`` or ``(60,)``.
        num_classes: output classes.
        width: hidden-size multiplier in (0, 1].
        rate: the scaler's width rate (1: no scaling).
        norm: ``none`` or ``batch`` (static batch-norm; CNN only).
        track_norm_stats: give batch-norms running statistics (for evaluation).

    Raises:
        ConfigError: unknown name or norm, bad width, or an input the model cannot take.
    """
    if name not in MODELS:
        raise ConfigError(f"model.name: unknown model '{name}' (known: {', '.join(MODELS)})")
    if not 0.0 < width <= 1.0:
        raise ConfigError(f"model.width: must be in (0, 1], got {width}")
    if norm not in NORMS:
        raise ConfigError(f"model.norm: unknown norm '{norm}' (known: {', '.join(NORMS)})")
    return MODELS[name](tuple(input_shape), num_classes, width, _Options(rate, norm, track_norm_stats))
