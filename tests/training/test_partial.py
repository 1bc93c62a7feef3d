"""Partial-parameter training: optimiser state for active elements only, same steps as a
dense optimiser whose inactive gradients are zero."""

import pytest
import torch
from torch import nn

from fedfit.training import OptimizerConfig, task_generator, train
from fedfit.training.partial import mask_generator, random_masks
from fedfit.training.techniques import build_program
from fedfit.types import Techniques, TrainPlan


def _reference(model: nn.Module, params, x, y, masks, make_opt) -> dict[str, torch.Tensor]:
    model.load_state_dict(params)
    opt = make_opt(model.parameters())
    for idx in torch.randperm(len(x), generator=task_generator(1, 2, 3)).split(8):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
        for n, p in model.named_parameters():
            p.grad *= masks[n]
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_partial_training_equals_masked_dense_optimiser(cnn_task, kind: str) -> None:
    model, params, x, y = cnn_task
    cfg = OptimizerConfig(momentum=0.9, kind=kind)
    plan = TrainPlan(2, 3, 8, lr=0.01, techniques=Techniques(keep_fraction=0.3, mask_seed=1))
    update = train(model, params, x, y, plan, seed=1, optimizer=cfg)
    masks = random_masks(params, 0.3, mask_generator(1, 2, 3))
    make = (lambda ps: torch.optim.Adam(ps, lr=0.01)) if kind == "adam" else (
        lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9))
    ref = _reference(model, params, x, y, masks, make)
    for k in params:
        assert torch.equal(update.masks[k], masks[k])
        assert torch.allclose(update.params[k], ref[k], atol=1e-6), k
        assert torch.equal(update.params[k][~masks[k]], params[k][~masks[k]])  # inactive untouched


def test_optimiser_state_is_held_for_active_elements_only(cnn_task) -> None:
    model, params, x, y = cnn_task
    plan = TrainPlan(0, 0, 8, techniques=Techniques(keep_fraction=0.25))
    program = build_program(model, plan, OptimizerConfig(kind="adam"), x, y)
    program.micro_step(x[:8], y[:8], 8)
    program.step()
    active = sum(int(m.sum()) for m in random_masks(params, 0.25, mask_generator(0, 0, 0)).values())
    state = program.optimizers[0].state.values()
    assert sum(s["exp_avg"].numel() + s["exp_avg_sq"].numel() for s in state) == 2 * active
    assert active < 0.35 * sum(p.numel() for p in params.values())
