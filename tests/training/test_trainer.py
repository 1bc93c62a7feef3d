"""The local trainer against plain PyTorch references."""

import torch
from torch import nn

from fedfit.models import build_model
from fedfit.training import evaluate, task_generator, train
from fedfit.types import TrainPlan


def _data(n: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randn(n, 20, generator=g), torch.randint(0, 4, (n,), generator=g)


def _params(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_accumulation_equals_full_batch() -> None:
    x, y = _data()
    torch.manual_seed(0)
    model = build_model("mlp", (20,), 4)
    start = _params(model)
    big = train(model, start, x, y, TrainPlan(0, 0, micro_batch=16, lr=0.1), seed=3)
    small = train(model, start, x, y, TrainPlan(0, 0, micro_batch=4, accumulation_steps=4, lr=0.1), seed=3)
    for k in big.params:
        assert (big.params[k] - small.params[k]).abs().max() <= 1e-5
    assert big.steps == small.steps == 4


def test_train_equals_hand_written_sgd_loop() -> None:
    x, y = _data(40)
    torch.manual_seed(0)
    model = build_model("logreg", (20,), 4)
    start = _params(model)
    plan = TrainPlan(7, 2, micro_batch=8, local_epochs=2, lr=0.2)

    update = train(model, start, x, y, plan, seed=11)

    ref = build_model("logreg", (20,), 4)
    ref.load_state_dict(start)
    opt = torch.optim.SGD(ref.parameters(), lr=0.2)
    gen = task_generator(11, 7, 2)
    for _ in range(2):
        for idx in torch.randperm(40, generator=gen).split(8):
            opt.zero_grad()
            nn.functional.cross_entropy(ref(x[idx]), y[idx]).backward()
            opt.step()
    for k, v in ref.state_dict().items():
        assert torch.allclose(update.params[k], v, atol=1e-6)
    assert update.samples_processed == 80 and update.steps == 10


def test_max_steps_caps_work() -> None:
    x, y = _data(64)
    model = build_model("logreg", (20,), 4)
    update = train(model, _params(model), x, y, TrainPlan(0, 0, micro_batch=8, local_epochs=3, max_steps=5), seed=0)
    assert update.steps == 5 and update.samples_processed == 40


def test_evaluate_counts_correct_predictions() -> None:
    model = build_model("logreg", (2,), 2)
    params = {"linear.weight": torch.tensor([[1.0, 0.0], [0.0, 1.0]]), "linear.bias": torch.zeros(2)}
    x = torch.tensor([[2.0, 0.0], [0.0, 2.0], [3.0, 0.0], [0.0, 1.0]])
    y = torch.tensor([0, 1, 1, 1])
    acc, loss = evaluate(model, params, x, y)
    assert acc == 0.75 and loss > 0
