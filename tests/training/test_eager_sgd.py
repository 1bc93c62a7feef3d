"""EagerSGD: PyTorch's SGD update, bit for bit, without the step wrapper that imports dynamo."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from fedfit.training.optimizers import EagerSGD, OptimizerConfig, make_optimizer


def _pair() -> tuple[torch.nn.Module, torch.nn.Module]:
    torch.manual_seed(0)
    a = torch.nn.Sequential(torch.nn.Linear(6, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))
    b = torch.nn.Sequential(torch.nn.Linear(6, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))
    b.load_state_dict(a.state_dict())
    return a, b


@pytest.mark.parametrize(("momentum", "weight_decay", "nesterov", "dampening"),
                         [(0.0, 0.0, False, 0.0), (0.9, 0.0, False, 0.0), (0.9, 1e-3, True, 0.0),
                          (0.5, 1e-2, False, 0.1), (0.0, 1e-3, False, 0.0)])
def test_same_bits_as_torch_sgd(momentum: float, weight_decay: float, nesterov: bool, dampening: float) -> None:
    a, b = _pair()
    kwargs = dict(lr=0.07, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov, dampening=dampening)
    ref, eager = torch.optim.SGD(a.parameters(), **kwargs), EagerSGD(b.parameters(), **kwargs)
    gen = torch.Generator().manual_seed(1)
    for _ in range(4):
        x, y = torch.randn(5, 6, generator=gen), torch.randint(0, 3, (5,), generator=gen)
        for model, opt in ((a, ref), (b, eager)):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    if momentum:
        bufs = [(ref.state[p]["momentum_buffer"], eager.state[q]["momentum_buffer"])
                for p, q in zip(a.parameters(), b.parameters(), strict=True)]
        assert all(torch.equal(r, e) for r, e in bufs)


def test_hand_computed_step() -> None:
    w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    opt = EagerSGD([w], lr=0.5, momentum=0.0, weight_decay=0.1)
    w.grad = torch.tensor([0.2, 0.4])
    opt.step()
    # grad + wd * w = [0.3, 0.2]; w - 0.5 * that = [0.85, -2.1]
    assert torch.allclose(w.detach(), torch.tensor([0.85, -2.1]))


def test_make_optimizer_gives_eager_sgd_and_torch_adam() -> None:
    w = [torch.nn.Parameter(torch.zeros(2))]
    assert isinstance(make_optimizer(w, 0.1, OptimizerConfig()), EagerSGD)
    assert isinstance(make_optimizer(w, 0.1, OptimizerConfig(kind="adam")), torch.optim.Adam)


def test_training_step_does_not_import_dynamo() -> None:
    code = ("import sys, torch\n"
            "from fedfit.training.optimizers import OptimizerConfig, make_optimizer\n"
            "m = torch.nn.Linear(3, 2)\n"
            "opt = make_optimizer(m.parameters(), 0.1, OptimizerConfig(momentum=0.9))\n"
            "m(torch.ones(4, 3)).sum().backward(); opt.step(); opt.zero_grad()\n"
            "from fedfit.cost.profile import measure\n"
            "from fedfit.models import ModelSpec\n"
            "measure(ModelSpec('mlp', (1, 8, 8), 10))\n"
            "print('torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_step_hooks_are_refused_not_skipped() -> None:
    w = torch.nn.Parameter(torch.zeros(2))
    opt = EagerSGD([w], lr=0.1)
    opt.register_step_pre_hook(lambda *_: None)
    w.grad = torch.ones(2)
    with pytest.raises(ValueError, match="step hooks"):
        opt.step()


@pytest.mark.parametrize("weight_decay", [0.0, 1e-2])
def test_plain_step_in_one_foreach_call_keeps_torch_sgd_bits_with_mixed_dtypes_and_missing_grads(
        weight_decay: float) -> None:
    gen = torch.Generator().manual_seed(3)
    start = [torch.randn(4, 3, generator=gen), torch.randn(5, dtype=torch.float64, generator=gen),
             torch.randn(2, generator=gen)]
    a = [torch.nn.Parameter(t.clone()) for t in start]
    b = [torch.nn.Parameter(t.clone()) for t in start]
    ref, eager = torch.optim.SGD(a, lr=0.3, weight_decay=weight_decay), EagerSGD(b, lr=0.3, weight_decay=weight_decay)
    for _ in range(3):
        grads = [torch.randn(t.shape, dtype=t.dtype, generator=gen) for t in start]
        for params, opt in ((a, ref), (b, eager)):
            for p, g in zip(params[:2], grads, strict=False):  # the last tensor never has a gradient
                p.grad = g.clone()
            opt.step()
    assert all(torch.equal(p, q) for p, q in zip(a, b, strict=True))
    assert torch.equal(b[2], start[2])
