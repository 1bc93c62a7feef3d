"""MobileNetV2 (Sandler et al. 2018) in the zoo: its blocks, stages and width groups."""

from __future__ import annotations

import pytest
import torch

from fedfit.errors import ConfigError
from fedfit.models import ModelSpec
from fedfit.models.indices import sub_map
from fedfit.models.stages import run_stages, stages_of

SMALL = ModelSpec("mobilenetv2", (3, 64, 64), 10, width=0.35, norm="batch")


def _conv_bn(cin: int, cout: int, k: int, groups: int = 1) -> int:
    """A bias-free conv and its batch-norm's weight and bias."""
    return cout * (cin // groups) * k * k + 2 * cout


def test_width_one_has_the_papers_parameter_count_without_rounding() -> None:
    # Table 2 of Sandler et al.: rows (t, c, n, s); at width 1 no channel needs rounding
    rows = ((1, 16, 1), (6, 24, 2), (6, 32, 3), (6, 64, 4), (6, 96, 3), (6, 160, 3), (6, 320, 1))
    total, cin = _conv_bn(3, 32, 3), 32
    for t, c, n in rows:
        for _ in range(n):
            hidden = cin * t
            total += (_conv_bn(cin, hidden, 1) if t != 1 else 0) + _conv_bn(hidden, hidden, 3, hidden)
            total += _conv_bn(hidden, c, 1)
            cin = c
    total += _conv_bn(320, 1280, 1) + 1280 * 1000 + 1000
    model = ModelSpec("mobilenetv2", (3, 224, 224), 1000, norm="batch").build()
    assert sum(p.numel() for p in model.parameters()) == total == 3504872  # torchvision's mobilenet_v2: 3,504,872


def test_the_derived_stages_reproduce_the_forward() -> None:
    model = SMALL.build().eval()
    x = torch.rand(2, 3, 64, 64)
    stages = stages_of(model)
    assert len(stages) == 1 + 17 + 1  # stem, seventeen blocks, head
    assert torch.allclose(run_stages(model, stages, x), model(x), atol=1e-5)
    assert all(any(s.owns(n) for s in stages) for n, _ in model.named_parameters())


@pytest.mark.parametrize("width", [0.5, 0.25])
def test_width_groups_cut_the_master_into_the_narrow_model(width: float) -> None:
    master = SMALL.build().state_dict()
    narrow = SMALL.build(width).state_dict()
    sub = sub_map(SMALL, width).extract(master)
    assert {k: tuple(v.shape) for k, v in sub.items()} == {k: tuple(v.shape) for k, v in narrow.items() if k in sub}
    assert set(sub) == {k for k, v in master.items() if v.is_floating_point()}


def test_the_narrow_model_runs_on_the_extracted_weights() -> None:
    narrow = SMALL.build(0.5)
    narrow.load_state_dict(sub_map(SMALL, 0.5).extract(SMALL.build().state_dict()), strict=False)
    assert narrow(torch.rand(2, 3, 64, 64)).shape == (2, 10)


def test_mobilenet_refuses_images_smaller_than_64() -> None:
    with pytest.raises(ConfigError, match="mobilenetv2 needs images"):
        ModelSpec("mobilenetv2", (3, 32, 32), 10).build()
