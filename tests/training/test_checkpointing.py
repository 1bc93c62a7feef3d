"""Gradient checkpointing gives the gradients of plain training, and really recomputes."""

import torch
from torch import nn

from fedfit.models.stages import stages_of
from fedfit.training import OptimizerConfig, train
from fedfit.training.checkpointing import layered_forward
from fedfit.types import Techniques, TrainPlan


def test_checkpointed_gradients_equal_plain_gradients(cnn_task) -> None:
    model, _, x, y = cnn_task
    nn.functional.cross_entropy(model(x), y).backward()
    plain = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    forward = layered_forward(model, stages_of(model), checkpoint_from=0)
    nn.functional.cross_entropy(forward(x), y).backward()
    for n, p in model.named_parameters():
        assert torch.allclose(p.grad, plain[n], atol=1e-6), n


def test_checkpointed_training_equals_plain_training_with_momentum(cnn_task) -> None:
    model, params, x, y = cnn_task
    opt = OptimizerConfig(momentum=0.9)
    plain = train(model, params, x, y, TrainPlan(0, 0, 8, lr=0.1), seed=2, optimizer=opt)
    ckpt = train(model, params, x, y, TrainPlan(0, 0, 8, lr=0.1, techniques=Techniques(checkpointing=True)),
                 seed=2, optimizer=opt)
    for k in plain.params:
        assert torch.allclose(plain.params[k], ckpt.params[k], atol=1e-6), k


def test_checkpointing_keeps_only_stage_inputs_and_recomputes_in_backward(cnn_task) -> None:
    model, _, x, _ = cnn_task
    stages = stages_of(model)
    calls = []
    conv1 = model.conv1.forward
    model.conv1.forward = lambda t: (calls.append(1), conv1(t))[1]  # type: ignore[method-assign]
    out = layered_forward(model, stages, checkpoint_from=0)(x)
    assert len(calls) == 1
    out.sum().backward()
    assert len(calls) == 2  # the first stage ran again during backward
