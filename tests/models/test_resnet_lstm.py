"""The zoo's deeper models: ResNet-8/20 (with width groups) and the stacked-LSTM classifier."""

from __future__ import annotations

import pytest
import torch

from fedfit.errors import ConfigError
from fedfit.models import ModelSpec
from fedfit.models.indices import sub_map
from fedfit.models.stages import run_stages, stages_of


def test_resnet20_has_he_et_al_s_parameter_count_with_projection_shortcuts() -> None:
    model = ModelSpec("resnet20", (3, 32, 32), 10, norm="batch").build()
    stem = 3 * 9 * 16 + 2 * 16
    level0 = 3 * (2 * 16 * 16 * 9 + 2 * 2 * 16)
    level1 = (16 * 32 * 9 + 32 * 32 * 9 + 16 * 32 + 3 * 2 * 32) + 2 * (2 * 32 * 32 * 9 + 2 * 2 * 32)
    level2 = (32 * 64 * 9 + 64 * 64 * 9 + 32 * 64 + 3 * 2 * 64) + 2 * (2 * 64 * 64 * 9 + 2 * 2 * 64)
    assert sum(p.numel() for p in model.parameters()) == stem + level0 + level1 + level2 + 64 * 10 + 10 == 272474


@pytest.mark.parametrize(("name", "count"), [("resnet8", 5), ("resnet20", 11), ("lstm", 3)])
def test_the_derived_stages_reproduce_the_forward(name: str, count: int) -> None:
    model = ModelSpec(name, (1, 28, 28), 10).build().eval()
    x = torch.rand(3, 1, 28, 28)
    stages = stages_of(model)
    assert len(stages) == count
    assert torch.allclose(run_stages(model, stages, x), model(x), atol=1e-6)
    assert all(any(s.owns(n) for s in stages) for n, _ in model.named_parameters())


@pytest.mark.parametrize("width", [0.5, 0.25])
def test_resnet_width_groups_cut_the_master_into_the_narrow_model(width: float) -> None:
    spec = ModelSpec("resnet8", (1, 28, 28), 10, norm="batch")
    master = spec.build().state_dict()
    narrow = spec.build(width).state_dict()
    sub = sub_map(spec, width).extract(master)
    assert {k: tuple(v.shape) for k, v in sub.items()} == {k: tuple(v.shape) for k, v in narrow.items()
                                                             if k in sub}
    assert set(sub) == {k for k, v in master.items() if v.is_floating_point()}


def test_lstm_parameter_count_matches_the_gate_formula() -> None:
    model = ModelSpec("lstm", (1, 28, 28), 10).build()
    def lstm(i: int, h: int) -> int:
        return 4 * h * (i + h) + 2 * 4 * h
    assert sum(p.numel() for p in model.parameters()) == lstm(28, 64) + lstm(64, 64) + 64 * 10 + 10


def test_resnet_refuses_inputs_that_are_not_images() -> None:
    with pytest.raises(ConfigError, match="resnet needs images"):
        ModelSpec("resnet8", (60,), 3).build()


def test_lstm_flops_are_counted_from_the_gate_products() -> None:
    from fedfit.cost import measure
    cost = measure(ModelSpec("lstm", (1, 28, 28), 10))
    per_step = 2 * 4 * 64 * (28 + 64) + 2 * 4 * 64 * (64 + 64)  # both layers' gate matmuls
    assert cost.forward_flops_per_sample == 28 * per_step + 2 * 64 * 10
