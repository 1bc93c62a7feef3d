"""Local DP-SGD: per-sample clipping against a per-sample autograd loop, noise of σC/n, no-op limits."""

from __future__ import annotations

import torch
from torch import nn

from fedfit.training import OptimizerConfig, train
from fedfit.training.dp_sgd import LocalDP
from fedfit.types import TrainPlan


def _data() -> tuple[nn.Module, dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(6, 3))
    params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    x = torch.randn(8, 1, 2, 3) * 3
    y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    return model, params, x, y


def _plan(micro: int = 8, accumulation: int = 1) -> TrainPlan:
    return TrainPlan(device_id=0, round=0, micro_batch=micro, accumulation_steps=accumulation, lr=1.0)


def _reference_step(model: nn.Module, params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                    clip: float) -> dict[str, torch.Tensor]:
    """One SGD step (lr 1) on the mean of per-sample gradients clipped to ``clip``, one sample at a time."""
    model.load_state_dict(params)
    total = {k: torch.zeros_like(v) for k, v in model.named_parameters()}
    for xi, yi in zip(x, y, strict=True):
        model.zero_grad()
        nn.functional.cross_entropy(model(xi[None]), yi[None]).backward()
        grads = {k: p.grad.clone() for k, p in model.named_parameters()}
        norm = torch.sqrt(sum(g.pow(2).sum() for g in grads.values()))
        for k, g in grads.items():
            total[k] += g * min(1.0, clip / float(norm))
    return {k: params[k] - total[k] / len(x) for k in total}


def test_clipped_step_equals_the_per_sample_loop() -> None:
    model, params, x, y = _data()
    out = train(model, params, x, y, _plan(), seed=0, optimizer=OptimizerConfig(local_dp=LocalDP(0.1, 0.0)))
    expected = _reference_step(model, params, x, y, clip=0.1)
    assert all(torch.allclose(out.params[k], expected[k], atol=1e-6) for k in expected)


def test_accumulated_micro_batches_give_the_same_clipped_step() -> None:
    model, params, x, y = _data()
    dp = OptimizerConfig(local_dp=LocalDP(0.1, 0.0))
    whole = train(model, params, x, y, _plan(8, 1), seed=0, optimizer=dp)
    parts = train(model, params, x, y, _plan(2, 4), seed=0, optimizer=dp)
    assert all(torch.allclose(whole.params[k], parts.params[k], atol=1e-6) for k in whole.params)


def test_no_clipping_and_no_noise_is_plain_sgd() -> None:
    model, params, x, y = _data()
    plain = train(model, params, x, y, _plan(), seed=0)
    dp = train(model, params, x, y, _plan(), seed=0, optimizer=OptimizerConfig(local_dp=LocalDP(1e9, 0.0)))
    assert all(torch.allclose(plain.params[k], dp.params[k], atol=1e-6) for k in plain.params)


def test_noise_on_the_step_has_standard_deviation_sigma_clip_over_batch() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(100, 100))
    params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    x, y = torch.zeros(4, 1, 10, 10), torch.zeros(4, dtype=torch.long)
    quiet = train(model, params, x, y, _plan(4), seed=0, optimizer=OptimizerConfig(local_dp=LocalDP(0.5, 0.0)))
    noisy = train(model, params, x, y, _plan(4), seed=0, optimizer=OptimizerConfig(local_dp=LocalDP(0.5, 2.0)))
    diff = noisy.params["1.weight"] - quiet.params["1.weight"]
    assert abs(float(diff.std()) - 2.0 * 0.5 / 4) < 0.01
