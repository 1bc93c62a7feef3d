"""Selective layer updating: frozen stages get nothing, the update holds trained stages only."""

import torch
from torch import nn

from fedfit.models.stages import stages_of
from fedfit.training import OptimizerConfig, task_generator, train
from fedfit.training.freezing import importance_stages, select_stages
from fedfit.training.techniques import build_program
from fedfit.types import Techniques, TrainPlan


def test_selection_modes_pick_the_documented_stages() -> None:
    assert select_stages("head", 1, 0, 4) == (3,)
    assert select_stages("last_k", 2, 0, 4) == (2, 3)
    assert [select_stages("cyclic", 2, r, 4) for r in range(3)] == [(0, 1), (2, 3), (0, 1)]
    assert select_stages("importance", 2, 0, 4) is None


def test_head_only_training_equals_a_hand_written_loop_over_the_head(cnn_task) -> None:
    model, params, x, y = cnn_task
    plan = TrainPlan(3, 1, 8, lr=0.1, techniques=Techniques(train_stages=(3,)))
    update = train(model, params, x, y, plan, seed=4, optimizer=OptimizerConfig(momentum=0.5))
    model.load_state_dict(params)
    opt = torch.optim.SGD(model.fc2.parameters(), lr=0.1, momentum=0.5)
    for idx in torch.randperm(24, generator=task_generator(4, 3, 1)).split(8):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
        opt.step()
    assert sorted(update.params) == ["fc2.bias", "fc2.weight"]
    assert torch.allclose(update.params["fc2.weight"], model.fc2.weight, atol=1e-6)


def test_frozen_parameters_get_no_gradient_and_no_optimiser_state(cnn_task) -> None:
    model, _, x, y = cnn_task
    plan = TrainPlan(0, 0, 8, techniques=Techniques(train_stages=(2, 3)))
    program = build_program(model, plan, OptimizerConfig(kind="adam"), x, y)
    program.micro_step(x[:8], y[:8], 8)
    program.step()
    opt = program.optimizers[0]
    held = sum(p.numel() for p in opt.state)
    assert held == model.fc1.weight.numel() + model.fc1.bias.numel() + model.fc2.weight.numel() + 4
    assert all(len(s) == 3 for s in opt.state.values())  # step, exp_avg, exp_avg_sq


def test_importance_picks_the_stages_with_largest_mean_gradient(cnn_task) -> None:
    model, _, x, y = cnn_task
    nn.functional.cross_entropy(model(x[:8]), y[:8]).backward()
    score = [torch.stack([p.grad.abs().mean() for n, p in model.named_parameters() if n.startswith(layer)]).mean()
             for layer in ("conv1", "conv2", "fc1", "fc2")]
    expected = tuple(sorted(sorted(range(4), key=lambda i: -float(score[i]))[:2]))
    model.zero_grad()
    assert importance_stages(model, stages_of(model), x[:8], y[:8], 2) == expected
