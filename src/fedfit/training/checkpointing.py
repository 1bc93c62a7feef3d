"""Gradient checkpointing over model stages (Chen et al. 2016, "Training Deep Nets with
Sublinear Memory Cost").

Each checkpointed stage keeps only its input during forward; in backward its forward is run
again (non-reentrant ``torch.utils.checkpoint``) to rebuild the activations it needs. The last
stage is not checkpointed: its backward comes first, so recomputing it would save nothing.
Gradients are those of plain training; the price is one more forward of the checkpointed stages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from fedfit.models.stages import Stage

#: Applied to every stage output but the last (e.g. fake quantisation); ``None``: nothing.
Between = Callable[[torch.Tensor], torch.Tensor] | None


def layered_forward(model: nn.Module, stages: Sequence[Stage], *, checkpoint_from: int | None = None,
                    between: Between = None) -> Callable[[torch.Tensor], torch.Tensor]:
    """A forward over ``stages`` that checkpoints stages ``checkpoint_from .. n-2``.

    Args:
        model: the module whose layers the stages read.
        stages: the model's stages, input to output.
        checkpoint_from: first stage to checkpoint (earlier stages are frozen and save nothing);
            ``None``: no checkpointing.
        between: a function applied to each stage output except the last.
    """
    n = len(stages)

    def forward(x: torch.Tensor) -> torch.Tensor:
        for i, stage in enumerate(stages):
            if checkpoint_from is not None and checkpoint_from <= i < n - 1:
                x = checkpoint(stage.forward, model, x, use_reentrant=False)
            else:
                x = stage.forward(model, x)
            if between is not None and i < n - 1:
                x = between(x)
        return x

    return forward
