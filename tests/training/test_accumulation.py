"""Gradient accumulation and per-epoch micro-batches against full-batch references."""

import pytest
import torch

from fedfit.models import build_model
from fedfit.training import OptimizerConfig, train
from fedfit.types import TrainPlan


def _images(n: int = 48) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(2)
    return torch.randn(n, 1, 8, 8, generator=g), torch.randint(0, 10, (n,), generator=g)


@pytest.mark.parametrize("micro, steps", [(1, 16), (4, 4)])
def test_cnn_micro_batch_times_accumulation_equals_batch(micro: int, steps: int) -> None:
    x, y = _images()
    torch.manual_seed(0)
    model = build_model("cnn", (1, 8, 8), 10)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    opt = OptimizerConfig(momentum=0.9)
    full = train(model, start, x, y, TrainPlan(0, 0, micro_batch=16, local_epochs=2, lr=0.05), seed=1, optimizer=opt)
    acc = train(model, start, x, y, TrainPlan(0, 0, micro_batch=micro, accumulation_steps=steps, local_epochs=2,
                                               lr=0.05), seed=1, optimizer=opt)
    assert max((full.params[k] - acc.params[k]).abs().max().item() for k in full.params) <= 1e-5


def test_per_epoch_batches_switch_at_epoch_boundaries() -> None:
    x, y = _images()
    torch.manual_seed(0)
    model = build_model("mlp", (1, 8, 8), 10)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    fixed = train(model, start, x, y, TrainPlan(0, 0, micro_batch=8, local_epochs=2, lr=0.1), seed=4)
    switched = train(model, start, x, y, TrainPlan(0, 0, micro_batch=8, local_epochs=2, lr=0.1,
                                                   epoch_batches=((8, 1), (2, 4))), seed=4)
    assert max((fixed.params[k] - switched.params[k]).abs().max().item() for k in fixed.params) <= 1e-5
    assert switched.steps == fixed.steps == 12
    assert (switched.micro_batch, switched.accumulation_steps, switched.epoch_batches) == (2, 4, ((8, 1), (2, 4)))
