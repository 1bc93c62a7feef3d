"""Count FLOPs of a model or one of its stages: ``FlopCounterMode`` with oneDNN off and grouped
convolutions' backward counted with their groups (:func:`flop_counter`)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode, conv_backward_flop

from fedfit.models.eager import spare_dynamo_import
from fedfit.models.stages import Stage

#: FLOP counting is a dispatch mode, whose first dispatch would import torch._dynamo.
spare_dynamo_import()


def _grouped_conv_backward_flop(grad_out_shape: Any, x_shape: Any, w_shape: Any, *args: Any,
                                out_shape: Any = None, **kwargs: Any) -> int:
    """Backward FLOPs of a convolution with its groups counted: torch's formula computes the
    weight gradient as if ``groups`` were 1 (a depthwise conv's ``C`` times too many); the input
    gradient it already counts from the grouped weight's shape."""
    *rest, groups, output_mask = args
    torch_formula: Any = conv_backward_flop  # shape-wrapped: takes the output shapes as out_val
    grad_input = torch_formula(grad_out_shape, x_shape, w_shape, *rest, groups, [output_mask[0], False],
                               out_val=out_shape)
    grad_weight = torch_formula(grad_out_shape, x_shape, w_shape, *rest, groups, [False, output_mask[1]],
                                out_val=out_shape)
    return int(grad_input) + int(grad_weight) // max(1, int(groups))


@contextmanager
def flop_counter() -> Iterator[FlopCounterMode]:
    """``FlopCounterMode`` with oneDNN off: its fused CPU recurrent kernels have no FLOP formula
    (an LSTM counted as nothing), the decomposed path counts their matrix products. FLOPs are
    the math's, not the kernel's, so convolutions and linear layers count the same either way.
    Grouped (depthwise) convolutions' backward is counted with their groups."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # oneDNN's note about Intel-GPU TF32
        mapping = {torch.ops.aten.convolution_backward: _grouped_conv_backward_flop}
        with torch.backends.mkldnn.flags(enabled=False), FlopCounterMode(display=False, custom_mapping=mapping) as mode:
            yield mode


def stage_flops(model: nn.Module, stage: Stage, x: torch.Tensor) -> tuple[float, float]:
    """(forward, backward) FLOPs of ``stage`` on the batch ``x`` (not per sample)."""
    with flop_counter() as fwd:
        out = stage.forward(model, x)
    with flop_counter() as bwd:
        out.sum().backward()  # the gradient of ones; backward(ones) would import sympy (~1 s) for a shape check
    model.zero_grad(set_to_none=True)
    return float(fwd.get_total_flops()), float(bwd.get_total_flops())
