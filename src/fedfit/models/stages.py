"""The zoo models as a sequence of stages: the unit of checkpointing, freezing, progressive
training and split learning.

A stage is one parametrised layer with the activation and pooling that follow it, so
``stage[n-1](... stage[0](x))`` equals ``model(x)`` exactly. A stage names the layers whose
parameters it owns; parameter names stay the master's (``conv1.weight``), so a stage subset is
a subset of the master's coordinates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from fedfit.models.custom import derived_stages
from fedfit.models.small import CNN, CNN1D, MLP, LogisticRegression

#: A stage's computation: ``forward(model, x) -> y`` (it reads the model's layers).
StageFn = Callable[[nn.Module, torch.Tensor], torch.Tensor]


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage of a model: a name, the layers it owns, and its forward."""

    name: str
    layers: tuple[str, ...]
    forward: StageFn

    def owns(self, param_name: str) -> bool:
        """Whether parameter ``param_name`` (e.g. ``conv1.weight``) belongs to this stage."""
        return any(param_name.startswith(f"{layer}.") for layer in self.layers)


def _apply(m: nn.Module, layer: str, x: torch.Tensor) -> torch.Tensor:
    out: torch.Tensor = m.get_submodule(layer)(x)
    return out


def _conv_block(conv: str, norm: str, pool: Callable[[torch.Tensor, int], torch.Tensor], k: int) -> StageFn:
    """conv → scaler → norm → ReLU → pool, as the CNN's forward (scaler and norm may be identities)."""
    def forward(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
        y = _apply(m, conv, x)
        if hasattr(m, "scaler"):
            y = _apply(m, "scaler", y)
        if hasattr(m, norm):
            y = _apply(m, norm, y)
        return pool(torch.relu(y), k)
    return forward


def _cnn_fc1(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return torch.relu(_apply(m, "fc1", x.flatten(1)))


def _head(layer: str, flatten: bool = False) -> StageFn:
    def forward(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return _apply(m, layer, x.flatten(1) if flatten else x)
    return forward


def _mlp_fc1(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return torch.relu(_apply(m, "scaler", _apply(m, "fc1", x.flatten(1))))


def _mlp_fc2(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return torch.relu(_apply(m, "scaler", _apply(m, "fc2", x)))


_STAGES: dict[type, tuple[Stage, ...]] = {
    CNN: (Stage("conv1", ("conv1", "norm1"), _conv_block("conv1", "norm1", torch.max_pool2d, 2)),
          Stage("conv2", ("conv2", "norm2"), _conv_block("conv2", "norm2", torch.max_pool2d, 2)),
          Stage("fc1", ("fc1",), _cnn_fc1), Stage("fc2", ("fc2",), _head("fc2"))),
    CNN1D: (Stage("conv1", ("conv1",), _conv_block("conv1", "", torch.max_pool1d, 4)),
            Stage("conv2", ("conv2",), _conv_block("conv2", "", torch.max_pool1d, 4)),
            Stage("fc", ("fc",), _head("fc", flatten=True))),
    MLP: (Stage("fc1", ("fc1",), _mlp_fc1), Stage("fc2", ("fc2",), _mlp_fc2),
          Stage("fc3", ("fc3",), _head("fc3"))),
    LogisticRegression: (Stage("linear", ("linear",), _head("linear", flatten=True)),),
}


def stages_of(model: nn.Module) -> tuple[Stage, ...]:
    """The stages of a model, input to output: the zoo's own, else derived from the module
    (:func:`fedfit.models.custom.derived_stages`: its ``fedfit_stages()`` or its children).

    Raises:
        PlanError: the model has no stage decomposition.
    """
    found = _STAGES.get(type(model))
    if found is None:
        return derived_stages(model)
    return found


def run_stages(model: nn.Module, stages: Sequence[Stage], x: torch.Tensor) -> torch.Tensor:
    """Apply ``stages`` in order to ``x``."""
    for stage in stages:
        x = stage.forward(model, x)
    return x


def stage_param_names(model: nn.Module, stage_ids: Sequence[int]) -> list[str]:
    """Names of the parameters owned by the stages ``stage_ids``."""
    chosen = [stages_of(model)[i] for i in stage_ids]
    return [n for n, _ in model.named_parameters() if any(s.owns(n) for s in chosen)]
