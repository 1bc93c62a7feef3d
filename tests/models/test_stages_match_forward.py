"""Running a model's stages in order equals its forward, for every zoo model and option."""

import pytest
import torch

from fedfit.models import ModelSpec
from fedfit.models.stages import run_stages, stages_of


@pytest.mark.parametrize("spec", [
    ModelSpec("cnn", (1, 28, 28), 10), ModelSpec("cnn", (1, 28, 28), 10, 1.0, "batch", True),
    ModelSpec("mlp", (1, 28, 28), 10), ModelSpec("mlp", (1, 28, 28), 10, 1.0, "none", True),
    ModelSpec("logreg", (60,), 10), ModelSpec("cnn1d", (1, 1024), 4),
])
@pytest.mark.parametrize("rate", [1.0, 0.5])
def test_stages_compose_to_forward(spec: ModelSpec, rate: float) -> None:
    torch.manual_seed(0)
    model = spec.build(rate)
    model.train()
    x = torch.randn(4, *spec.input_shape)
    assert torch.allclose(run_stages(model, stages_of(model), x), model(x))
