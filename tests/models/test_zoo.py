import pytest
import torch

from fedfit.errors import ConfigError
from fedfit.models import build_model


@pytest.mark.parametrize("name, shape", [("logreg", (60,)), ("mlp", (1, 28, 28)), ("cnn", (1, 28, 28)), ("cnn", (1, 8, 8))])
def test_models_map_inputs_to_class_logits(name: str, shape: tuple[int, ...]) -> None:
    model = build_model(name, shape, 10)
    assert model(torch.zeros(3, *shape)).shape == (3, 10)


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_width_shrinks_parameters(name: str) -> None:
    full = sum(p.numel() for p in build_model(name, (1, 28, 28), 10).parameters())
    half = sum(p.numel() for p in build_model(name, (1, 28, 28), 10, width=0.5).parameters())
    assert half < 0.5 * full


def test_bad_model_requests_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="model.name"):
        build_model("resnet", (1, 28, 28), 10)
    with pytest.raises(ConfigError, match="model.width"):
        build_model("mlp", (1, 28, 28), 10, width=1.5)
    with pytest.raises(ConfigError, match="square"):
        build_model("cnn", (60,), 10)
