"""Quantisation-aware training: fake-quantised weights and activations, straight-through
gradients, and export of an integer model (Jacob et al. 2018, "Quantization and Training of
Neural Networks for Efficient Integer-Arithmetic-Only Inference"; Bengio et al. 2013 for the
straight-through estimator).

During local training every weight is replaced by its symmetric per-tensor b-bit quantisation
and every stage output (but the logits) by its affine per-tensor quantisation over the batch's
range; the backward pass treats the rounding as the identity. The master keeps float32
weights; :func:`export_int` turns them into int8 tensors and scales, and
:func:`quantised_forward` runs the model as integer inference would see it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn
from torch.nn.utils import parametrize

from fedfit.models.stages import Stage, stages_of
from fedfit.types import Params


def weight_scale(w: torch.Tensor, bits: int) -> torch.Tensor:
    """Symmetric per-tensor scale: max |w| maps to the largest signed b-bit integer."""
    return w.detach().abs().max().clamp_min(1e-12) / (2 ** (bits - 1) - 1)


def fake_quantise_weight(w: torch.Tensor, bits: int) -> torch.Tensor:
    """``round(w / s).clamp(±qmax) · s`` forward, identity gradient backward."""
    qmax = 2 ** (bits - 1) - 1
    s = weight_scale(w, bits)
    q = (w.detach() / s).round().clamp(-qmax, qmax) * s
    out: torch.Tensor = w + (q - w.detach())
    return out


def fake_quantise_activation(a: torch.Tensor, bits: int) -> torch.Tensor:
    """Affine per-tensor quantisation over [min, max] of ``a``, identity gradient backward."""
    lo, hi = a.detach().min(), a.detach().max()
    s = ((hi - lo) / (2**bits - 1)).clamp_min(1e-12)
    q = ((a.detach() - lo) / s).round().clamp(0, 2**bits - 1) * s + lo
    out: torch.Tensor = a + (q - a.detach())
    return out


class FakeQuantisedWeight(nn.Module):
    """A parametrisation: the module's weight seen through :func:`fake_quantise_weight`."""

    def __init__(self, bits: int) -> None:
        super().__init__()
        self.bits = bits

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        return fake_quantise_weight(w, self.bits)


def attach(model: nn.Module, bits: int) -> None:
    """Fake-quantise every weight and bias of ``model`` in place (a parametrisation)."""
    for module in list(model.modules()):
        for name, _ in list(module.named_parameters(recurse=False)):
            parametrize.register_parametrization(module, name, FakeQuantisedWeight(bits))


def detach_all(model: nn.Module) -> None:
    """Remove the parametrisations, keeping the float (shadow) weights."""
    for module in list(model.modules()):
        if parametrize.is_parametrized(module):
            for name in list(getattr(module, "parametrizations").keys()):
                parametrize.remove_parametrizations(module, name, leave_parametrized=False)


def export_int(params: Params, bits: int = 8) -> dict[str, tuple[torch.Tensor, float]]:
    """The integer model: each float tensor as (int8 values, scale)."""
    qmax = 2 ** (bits - 1) - 1
    out: dict[str, tuple[torch.Tensor, float]] = {}
    for name, w in params.items():
        s = weight_scale(w, bits)
        out[name] = ((w / s).round().clamp(-qmax, qmax).to(torch.int8), float(s))
    return out


def dequantise(exported: dict[str, tuple[torch.Tensor, float]]) -> Params:
    """Float tensors equal to what integer inference computes with."""
    return {name: q.to(torch.float32) * s for name, (q, s) in exported.items()}


def save_int(path: str | Path, exported: dict[str, tuple[torch.Tensor, float]]) -> None:
    """Write an exported integer model as safetensors: ``NAME`` int8 values, ``NAME.scale`` float32."""
    tensors: dict[str, torch.Tensor] = {}
    for name, (q, scale) in exported.items():
        tensors[name], tensors[f"{name}.scale"] = q.contiguous(), torch.tensor([scale], dtype=torch.float32)
    save_file(tensors, str(path))


@torch.no_grad()
def quantised_accuracy(model: nn.Module, params: Params, x: torch.Tensor, y: torch.Tensor, bits: int = 8) -> float:
    """Accuracy of ``params`` exported to ``bits``-bit integers, run with quantised activations."""
    model.load_state_dict(dequantise(export_int(params, bits)))
    model.eval()
    logits = quantised_forward(model, stages_of(model), x, bits)
    return float((logits.argmax(1) == y).float().mean()) if len(y) else 0.0


@torch.no_grad()
def quantised_forward(model: nn.Module, stages: Sequence[Stage], x: torch.Tensor, bits: int = 8) -> torch.Tensor:
    """Forward with quantised activations between stages (load dequantised weights first)."""
    for i, stage in enumerate(stages):
        x = stage.forward(model, x)
        if i < len(stages) - 1:
            x = fake_quantise_activation(x, bits)
    return x
