"""A deployed device's per-epoch batch decision (``train(..., at_epoch=...)``) against the plan
that fixes the same batches in advance."""

import torch
from torch import nn

from fedfit.models import build_model
from fedfit.training import train
from fedfit.types import TrainPlan


def _data(n: int = 48) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(2)
    return torch.randn(n, 20, generator=g), torch.randint(0, 4, (n,), generator=g)


def _start() -> tuple[nn.Module, dict[str, torch.Tensor]]:
    torch.manual_seed(0)
    model = build_model("mlp", (20,), 4)
    return model, {k: v.clone() for k, v in model.state_dict().items()}


def test_deciding_each_epoch_trains_exactly_as_the_same_batches_fixed_in_the_plan() -> None:
    x, y = _data()
    model, start = _start()
    fixed = train(model, start, x, y, TrainPlan(0, 3, micro_batch=8, lr=0.1, epoch_batches=((8, 1), (4, 2), (2, 1))),
                  seed=5)
    asked: list[int] = []

    def decide(epoch: int) -> tuple[int, int]:
        asked.append(epoch)
        return [(8, 1), (4, 2), (2, 1)][epoch]

    live = train(model, start, x, y, TrainPlan(0, 3, micro_batch=8, lr=0.1, local_epochs=3), seed=5, at_epoch=decide)
    assert asked == [0, 1, 2]
    assert live.epoch_batches == ((8, 1), (4, 2), (2, 1)) and (live.micro_batch, live.accumulation_steps) == (2, 1)
    assert live.steps == 48 // 8 + 48 // 8 + 48 // 2 == fixed.steps
    for k in fixed.params:
        assert torch.equal(fixed.params[k], live.params[k])


def test_a_pause_at_an_epoch_keeps_the_epochs_done_so_far() -> None:
    x, y = _data()
    model, start = _start()
    update = train(model, start, x, y, TrainPlan(0, 0, micro_batch=8, lr=0.1, local_epochs=3), seed=5,
                   at_epoch=lambda epoch: (8, 1) if epoch == 0 else None)
    one = train(model, start, x, y, TrainPlan(0, 0, micro_batch=8, lr=0.1, local_epochs=1), seed=5)
    assert update.epoch_batches == ((8, 1),) and update.samples_processed == 48 and update.steps == 6
    for k in one.params:
        assert torch.equal(one.params[k], update.params[k])


def test_the_step_cap_stops_before_asking_for_an_epoch_it_will_not_run() -> None:
    x, y = _data()
    model, start = _start()
    asked: list[int] = []

    def decide(epoch: int) -> tuple[int, int]:
        asked.append(epoch)
        return 8, 1

    update = train(model, start, x, y, TrainPlan(0, 0, micro_batch=8, lr=0.1, local_epochs=3, max_steps=6), seed=5,
                   at_epoch=decide)
    assert asked == [0] and update.steps == 6 and update.epoch_batches == ((8, 1),)
