"""Split learning gives the gradients of unsplit training."""

import torch
from torch import nn

from fedfit.models.stages import stages_of
from fedfit.training import OptimizerConfig, train
from fedfit.training.split import split_micro_step
from fedfit.types import Techniques, TrainPlan


def test_split_gradients_equal_unsplit_gradients_at_every_cut(cnn_task) -> None:
    model, _, x, y = cnn_task
    nn.functional.cross_entropy(model(x), y, reduction="sum").div(24).backward()
    plain = {n: p.grad.clone() for n, p in model.named_parameters()}
    for cut in (1, 2, 3):
        model.zero_grad()
        split_micro_step(model, stages_of(model), cut, x, y, 24)
        for n, p in model.named_parameters():
            assert torch.allclose(p.grad, plain[n], atol=1e-6), (cut, n)


def test_split_training_equals_unsplit_training_with_adam(cnn_task) -> None:
    model, params, x, y = cnn_task
    cfg = OptimizerConfig(kind="adam")
    plain = train(model, params, x, y, TrainPlan(0, 0, 8, lr=1e-3), seed=1, optimizer=cfg)
    split = train(model, params, x, y, TrainPlan(0, 0, 8, lr=1e-3, techniques=Techniques(split_cut=2)),
                  seed=1, optimizer=cfg)
    for k in plain.params:
        assert torch.allclose(plain.params[k], split.params[k], atol=1e-6), k
