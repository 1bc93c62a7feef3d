"""The fused micro-step of the zoo's linear stacks, and the whole plain-SGD step built on it: bit
for bit what autograd's step and PyTorch's SGD give."""

from __future__ import annotations

import pytest
import torch

from fedfit.models import ModelSpec
from fedfit.models.zoo import MLP
from fedfit.training import techniques
from fedfit.training.fused import fused_steps
from fedfit.training.optimizers import EagerSGD, OptimizerConfig
from fedfit.training.program import MicroStep
from fedfit.training.trainer import train
from fedfit.types import TrainPlan, Update

CASES = [  # (model, width, scaler rate, plan fields, optimiser)
    ("mlp", 1.0, 1.0, {"micro_batch": 32}, OptimizerConfig()),
    ("mlp", 1.0, 1.0, {"micro_batch": 7, "accumulation_steps": 3, "local_epochs": 2}, OptimizerConfig(momentum=0.9)),
    ("mlp", 0.5, 0.5, {"micro_batch": 16}, OptimizerConfig(momentum=0.9, weight_decay=1e-3)),
    ("mlp", 0.3, 0.3, {"micro_batch": 10, "epoch_batches": ((10, 1), (5, 2))}, OptimizerConfig(proximal_mu=0.1)),
    ("logreg", 1.0, 1.0, {"micro_batch": 16, "local_epochs": 3}, OptimizerConfig(kind="adam")),
    ("logreg", 1.0, 1.0, {"micro_batch": 64, "max_steps": 2}, OptimizerConfig(weight_decay=1e-2)),
]



def fused_step(model: torch.nn.Module) -> MicroStep | None:
    """The fused micro-step alone (an optimiser that is not plain ``EagerSGD``: no whole step)."""
    found = fused_steps(model, torch.optim.SGD(model.parameters(), lr=0.1))
    return None if found is None else found[0]

def _data(n: int = 101) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(4)
    return torch.randn((n, 1, 28, 28), generator=gen), torch.randint(0, 10, (n,), generator=gen)


def _train(name: str, width: float, rate: float, fields: dict[str, object], opt: OptimizerConfig,
           fused: bool, monkeypatch: pytest.MonkeyPatch) -> Update:
    spec = ModelSpec(name, (1, 28, 28), 10)
    torch.manual_seed(0)
    model = spec.build(width)
    if isinstance(model, MLP):
        model.scaler.rate = rate
    params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    with monkeypatch.context() as m:
        if not fused:
            m.setattr(techniques, "fused_steps", lambda model, opt: None)
        x, y = _data()
        return train(model, params, x, y, TrainPlan(3, 2, lr=0.05, **fields), seed=1, optimizer=opt)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_training_is_bit_identical_to_autograd(case: int, monkeypatch: pytest.MonkeyPatch) -> None:
    fused, autograd = (_train(*CASES[case], fused=f, monkeypatch=monkeypatch) for f in (True, False))
    assert fused.params.keys() == autograd.params.keys()
    for k in fused.params:
        assert torch.equal(fused.params[k], autograd.params[k]), k
    assert (fused.train_loss, fused.start_loss, fused.steps) == (autograd.train_loss, autograd.start_loss, autograd.steps)
    assert fused.steps > 1


def test_gradients_and_loss_of_one_step_equal_autograd() -> None:
    torch.manual_seed(0)
    model = ModelSpec("mlp", (1, 28, 28), 10).build(0.5)
    model.scaler.rate = 0.5
    x, y = _data(13)
    loss = torch.nn.functional.cross_entropy(model(x), y, reduction="sum") / 20
    loss.backward()
    want = [p.grad.clone() for p in model.parameters()]  # type: ignore[union-attr]
    model.zero_grad(set_to_none=True)
    step = fused_step(model)
    assert step is not None
    got_loss = step(x, y, 20)
    assert torch.equal(got_loss, loss.detach())
    assert all(torch.equal(p.grad, g) for p, g in zip(model.parameters(), want, strict=True))  # type: ignore[arg-type]


def test_other_models_hooks_frozen_parameters_and_evaluation_mode_keep_autograd() -> None:
    assert fused_step(ModelSpec("cnn", (1, 28, 28), 10).build()) is None
    hooked = ModelSpec("mlp", (1, 28, 28), 10).build()
    hooked.fc2.register_forward_hook(lambda *a: None)
    assert fused_step(hooked) is None
    frozen = ModelSpec("mlp", (1, 28, 28), 10).build()
    frozen.fc1.weight.requires_grad_(False)
    assert fused_step(frozen) is None
    assert fused_step(ModelSpec("logreg", (1, 28, 28), 10).build().eval()) is None
    tensor_hook = ModelSpec("logreg", (1, 28, 28), 10).build()
    tensor_hook.linear.bias.register_hook(lambda g: g)
    assert fused_step(tensor_hook) is None
    assert fused_step(ModelSpec("mlp", (1, 28, 28), 10).build()) is not None


WHOLE = [  # (model, width, scaler rate, micro-batch, effective batch, weight decay)
    ("mlp", 1.0, 1.0, 16, 16, 0.0),
    ("mlp", 0.5, 0.5, 5, 13, 1e-2),  # three micro-batches accumulated, the last one short
    ("logreg", 1.0, 1.0, 8, 8, 1e-3),
]


@pytest.mark.parametrize("case", WHOLE)
def test_whole_sgd_step_equals_autograd_and_torch_sgd(case: tuple[str, float, float, int, int, float]) -> None:
    name, width, rate, micro, batch, decay = case
    spec = ModelSpec(name, (1, 28, 28), 10)
    torch.manual_seed(0)
    fused, ref = spec.build(width), spec.build(width)
    for model in (fused, ref):
        if isinstance(model, MLP):
            model.scaler.rate = rate
    ref.load_state_dict(fused.state_dict())
    x, y = _data(3 * batch)
    steps = fused_steps(fused, EagerSGD(fused.parameters(), lr=0.1, weight_decay=decay))
    assert steps is not None and steps[1] is not None
    whole = steps[1]
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, weight_decay=decay)  # PyTorch's own update
    for idx in torch.randperm(3 * batch, generator=torch.Generator().manual_seed(2)).split(batch):
        got = whole(x, y, idx, micro)
        opt.zero_grad()
        want = 0.0
        for part in idx.split(micro):
            loss = torch.nn.functional.cross_entropy(ref(x[part]), y[part], reduction="sum") / len(idx)
            loss.backward()
            want += float(loss.detach()) * len(idx)
        opt.step()
        assert got == want
    assert all(torch.equal(p, q) for p, q in zip(fused.parameters(), ref.parameters(), strict=True))
    assert all(p.grad is None for p in fused.parameters())  # the gradients live in the step, never on the model


def test_whole_step_only_for_plain_sgd_over_every_parameter() -> None:
    model = ModelSpec("mlp", (1, 28, 28), 10).build()
    plain = fused_steps(model, EagerSGD(model.parameters(), lr=0.1))
    assert plain is not None and plain[1] is not None
    for opt in (EagerSGD(model.parameters(), lr=0.1, momentum=0.9), torch.optim.Adam(model.parameters()),
                torch.optim.SGD(model.parameters(), lr=0.1), EagerSGD(list(model.parameters())[:2], lr=0.1)):
        steps = fused_steps(model, opt)
        assert steps is not None and steps[1] is None, type(opt).__name__
    cnn = ModelSpec("cnn", (1, 28, 28), 10).build()
    assert fused_steps(cnn, EagerSGD(cnn.parameters(), lr=0.1)) is None
