"""Progressive training: stage k trained behind frozen stages with an auxiliary head."""

import torch
from torch import nn

from fedfit.training import task_generator, train
from fedfit.training.partial import mask_generator
from fedfit.training.progressive import auxiliary_head
from fedfit.types import Techniques, TrainPlan


def test_stage_one_equals_hand_training_with_the_same_auxiliary_head(cnn_task) -> None:
    model, params, x, y = cnn_task
    plan = TrainPlan(1, 2, 8, lr=0.1, techniques=Techniques(progressive_stage=1, mask_seed=9))
    update = train(model, params, x, y, plan, seed=3)
    model.load_state_dict(params)
    head = auxiliary_head(32 * 2 * 2, 4, mask_generator(9, 1, 2))
    opt = torch.optim.SGD([*model.conv2.parameters(), *head.parameters()], lr=0.1)
    for idx in torch.randperm(24, generator=task_generator(3, 1, 2)).split(8):
        opt.zero_grad()
        with torch.no_grad():
            h = torch.max_pool2d(torch.relu(model.conv1(x[idx])), 2)
        h = torch.max_pool2d(torch.relu(model.conv2(h)), 2)
        nn.functional.cross_entropy(head(h.flatten(1)), y[idx]).backward()
        opt.step()
    assert sorted(update.params) == ["conv2.bias", "conv2.weight"]
    assert torch.allclose(update.params["conv2.weight"], model.conv2.weight, atol=1e-6)
