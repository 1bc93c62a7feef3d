"""Static batch-norm and evaluation of a master model at every width.

HeteroFL (Diao et al. 2021, section 3.2) trains with batch-norms that keep no running
statistics — each batch normalises itself, so sub-models of different widths never mix
statistics — and, once training is done, recomputes the statistics for evaluation by passing
data through the finished model ("static batch normalisation"). :func:`calibrated` does that:
it builds the evaluation twin of a (sub-)model with running statistics, loads the trained
parameters, runs the calibration data through it with only the norms in training mode (the
scaler stays the identity, as at inference) and returns it in evaluation mode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from fedfit.models import ModelSpec
from fedfit.models.indices import sub_map
from fedfit.training.trainer import evaluate
from fedfit.types import Params

#: Widths ``fedfit evaluate`` reports (HeteroFL's levels a–e).
EVAL_WIDTHS: tuple[float, ...] = (1.0, 0.5, 0.25, 0.125, 0.0625)


@torch.no_grad()
def calibrated(spec: ModelSpec, rate: float, params: Params, calibration_x: torch.Tensor,
               batch: int = 500) -> nn.Module:
    """The model at ``rate`` holding ``params``, norms' statistics recomputed, in eval mode.

    Args:
        spec: the master model spec.
        rate: the width of ``params`` relative to the master.
        params: the (sub-)model's trained parameters (no running statistics).
        calibration_x: inputs whose statistics the norms take (unused without norms).
        batch: samples per calibration pass (the cumulative average makes it immaterial).
    """
    model = spec.build(rate, track_norm_stats=True)
    model.load_state_dict(params, strict=False)
    model.eval()
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if norms:
        for m in norms:
            m.reset_running_stats()
            m.train()
        for start in range(0, len(calibration_x), batch):
            model(calibration_x[start:start + batch])
        model.eval()
    return model


def evaluate_static(spec: ModelSpec, rate: float, params: Params, calibration_x: torch.Tensor,
                    x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """(accuracy, loss) of ``params`` at ``rate`` with static batch-norm statistics."""
    model = calibrated(spec, rate, params, calibration_x)
    return evaluate(model, model.state_dict(), x, y)


@dataclass(frozen=True, slots=True)
class WidthScore:
    """One row of a per-width evaluation."""

    width: float
    accuracy: float
    loss: float
    num_params: int


def evaluate_widths(spec: ModelSpec, params: Params, calibration_x: torch.Tensor, x: torch.Tensor,
                    y: torch.Tensor, *, widths: Sequence[float] = EVAL_WIDTHS, choice: str = "prefix",
                    scores: Mapping[str, torch.Tensor] | None = None) -> list[WidthScore]:
    """Accuracy, loss and parameter count of the master's sub-model at each width.

    Args:
        spec: the master model spec; ``params`` its trained parameters.
        calibration_x: inputs for static batch-norm statistics.
        x, y: the test set.
        widths: widths relative to the master.
        choice: ``prefix`` or ``importance`` (with ``scores``): which units each width keeps.
    """
    rows = []
    for w in widths:
        sub = sub_map(spec, w, "importance" if choice == "importance" else "prefix", scores).extract(params)
        acc, loss = evaluate_static(spec, w, sub, calibration_x, x, y)
        rows.append(WidthScore(w, acc, loss, sum(t.numel() for t in sub.values())))
    return rows
