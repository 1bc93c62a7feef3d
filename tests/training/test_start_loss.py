"""Updates report the loss of the model they received, on their first batch, before any step."""

from __future__ import annotations

import pytest
import torch

from fedfit.models import build_model
from fedfit.training import train
from fedfit.training.batched import train_cohort
from fedfit.training.trainer import evaluate
from fedfit.types import TrainPlan


def _data(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 1, 8, 8, generator=g), torch.randint(0, 10, (n,), generator=g)


@pytest.mark.parametrize("micro, accumulation", [(24, 1), (6, 4)])
def test_start_loss_is_the_received_models_loss_on_the_first_batch(micro: int, accumulation: int) -> None:
    # one effective batch covers all 24 samples: the first batch's mean loss is the received
    # model's loss on the whole local set, which evaluate() computes independently
    torch.manual_seed(0)
    model = build_model("mlp", (1, 8, 8), 10)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    x, y = _data(24, 1)
    _, expected = evaluate(model, start, x, y)
    plan = TrainPlan(0, 3, micro_batch=micro, accumulation_steps=accumulation, local_epochs=3, lr=0.5)
    update = train(model, start, x, y, plan, seed=2)
    assert update.steps == 3
    assert update.start_loss == pytest.approx(expected, rel=1e-5)
    assert update.train_loss < expected  # the path's mean loss fell after the first step


def test_batched_cohort_reports_the_same_start_loss_as_one_by_one() -> None:
    torch.manual_seed(0)
    model = build_model("mlp", (1, 8, 8), 10)
    start = model.state_dict()
    starts = [{k: v + 0.02 * i for k, v in start.items()} for i in range(3)]
    data = [_data(n, 5 + n) for n in (7, 20, 33)]
    plans = [TrainPlan(i, 1, micro_batch=8, local_epochs=2, lr=0.1) for i in range(3)]
    batched = train_cohort(model, starts, data, plans, seed=4)
    for s, (x, y), plan, got in zip(starts, data, plans, batched, strict=True):
        ref = train(model, s, x, y, plan, seed=4)
        assert ref.start_loss is not None and got.start_loss == pytest.approx(ref.start_loss, rel=1e-5)


def test_no_step_no_start_loss() -> None:
    model = build_model("mlp", (1, 8, 8), 10)
    x, y = _data(4, 0)
    update = train(model, model.state_dict(), x, y, TrainPlan(0, 0, micro_batch=4, local_epochs=0, lr=0.1), seed=0)
    assert update.steps == 0 and update.start_loss is None
