"""Stage decomposition equals the model's own forward."""

import torch

from fedfit.models import build_model
from fedfit.models.stages import run_stages, stage_param_names, stages_of


def test_stages_compose_to_the_model_forward() -> None:
    torch.manual_seed(0)
    for name, shape in (("cnn", (1, 8, 8)), ("mlp", (20,)), ("logreg", (20,))):
        model = build_model(name, shape, 4)
        x = torch.randn(5, *shape)
        assert torch.equal(run_stages(model, stages_of(model), x), model(x))


def test_every_parameter_belongs_to_exactly_one_stage() -> None:
    model = build_model("cnn", (1, 8, 8), 4)
    stages = stages_of(model)
    for name, _ in model.named_parameters():
        assert sum(s.owns(name) for s in stages) == 1
    assert stage_param_names(model, [3]) == ["fc2.weight", "fc2.bias"]
