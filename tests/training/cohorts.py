"""Shared cohort cases for the batched probes' tests (test_stacked_probe.py,
test_stacked_curvature.py): uneven local data and per-device starting parameters."""

from __future__ import annotations

import torch

from fedfit.models import build_model
from fedfit.types import Params

#: Uneven local data: 1 to 4 steps per epoch at effective batch 16; 1 sample: no probe (the data
#: cannot split); 2 to 16 samples: the first batch is all the device's data.
SIZES = (5, 17, 40, 33, 1, 2, 24, 9, 60, 16, 3, 11)


def cohort(name: str, devices: int) -> tuple[torch.nn.Module, list[Params], list[tuple[torch.Tensor, torch.Tensor]]]:
    """A zoo model on 8×8 inputs, each device's start (the model's, shifted by 0.001 × its index)
    and its random local data."""
    torch.manual_seed(0)
    model = build_model(name, (1, 8, 8), 10)
    start = model.state_dict()
    g = torch.Generator().manual_seed(3)
    data = [(torch.randn(n, 1, 8, 8, generator=g), torch.randint(0, 10, (n,), generator=g)) for n in SIZES[:devices]]
    return model, [{k: v + 0.001 * i for k, v in start.items()} for i in range(devices)], data


def max_diff(a: Params, b: Params) -> float:
    return max((a[k] - b[k]).abs().max().item() for k in a)
