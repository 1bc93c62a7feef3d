"""Width-scalable model zoo: the registry of builders, :class:`ModelSpec` and :func:`build_model`.

Every builder takes ``width`` (a multiplier of the hidden sizes; 1.0 is the full model) so that
sub-models of a master model are the same architecture with fewer hidden units. Input and output
sizes never scale. The networks live in :mod:`fedfit.models.small` (logistic regression, MLP,
CNN, 1-D CNN), :mod:`fedfit.models.resnet`, :mod:`fedfit.models.mobilenet` and
:mod:`fedfit.models.sequence`; HeteroFL's scaler and static batch-norm in :mod:`fedfit.models.layers`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from fedfit.errors import ConfigError
from fedfit.models.custom import ModelFactory
from fedfit.models.layers import Scaler
from fedfit.models.mobilenet import MobileNetV2
from fedfit.models.resnet import ResNet
from fedfit.models.sequence import LSTMClassifier
from fedfit.models.small import CNN, CNN1D, MLP, LogisticRegression

#: ``Scaler`` is re-exported for :mod:`fedfit.training.batched`, which imports it from here.
__all__ = ["MODELS", "NORMS", "ModelSpec", "Scaler", "build_model"]

NORMS = ("none", "batch")


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
        if len(shape) != 3 or min(shape[1:]) < 4:
            raise ConfigError(f"model.name: resnet needs images (channels, height, width) of side >= 4, got {shape}")
        return ResNet(shape[0], classes, blocks_per_level, width, rate=options.rate, norm=options.norm,
                      track_norm_stats=options.track_norm_stats)
    return build


def _mobilenetv2(shape: tuple[int, ...], classes: int, width: float, options: _Options) -> nn.Module:
    if len(shape) != 3 or min(shape[1:]) < 64:
        raise ConfigError(f"model.name: mobilenetv2 needs images (channels, height, width) of side >= 64, got {shape}")
    return MobileNetV2(shape[0], classes, width, rate=options.rate, norm=options.norm,
                       track_norm_stats=options.track_norm_stats)


def _lstm(shape: tuple[int, ...], classes: int, width: float, options: _Options) -> nn.Module:
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
