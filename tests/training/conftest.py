"""Small shared fixtures for the technique tests: a tiny CNN task."""

import pytest
import torch

from fedfit.models import build_model


@pytest.fixture
def cnn_task() -> tuple[torch.nn.Module, dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    model = build_model("cnn", (1, 8, 8), 4)
    params = {k: v.clone() for k, v in model.state_dict().items()}
    g = torch.Generator().manual_seed(5)
    return model, params, torch.randn(24, 1, 8, 8, generator=g), torch.randint(0, 4, (24,), generator=g)
