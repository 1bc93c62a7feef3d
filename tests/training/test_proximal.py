"""FedProx's proximal term in local training against a hand-written PyTorch loop."""

import torch
from torch import nn

from fedfit.models import build_model
from fedfit.training import OptimizerConfig, task_generator, train
from fedfit.types import TrainPlan


def test_proximal_term_equals_loss_with_explicit_penalty() -> None:
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(24, 6, generator=g), torch.randint(0, 3, (24,), generator=g)
    torch.manual_seed(0)
    model = build_model("logreg", (6,), 3)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    plan, mu = TrainPlan(1, 0, micro_batch=8, local_epochs=2, lr=0.3), 0.7

    update = train(model, start, x, y, plan, seed=5, optimizer=OptimizerConfig(proximal_mu=mu))

    ref = build_model("logreg", (6,), 3)
    ref.load_state_dict(start)
    anchor = [p.detach().clone() for p in ref.parameters()]
    opt = torch.optim.SGD(ref.parameters(), lr=plan.lr)
    gen = task_generator(5, 1, 0)
    for _ in range(plan.local_epochs):
        for idx in torch.randperm(len(x), generator=gen).split(8):
            opt.zero_grad()
            penalty = sum(((p - a) ** 2).sum() for p, a in zip(ref.parameters(), anchor, strict=True))
            (nn.functional.cross_entropy(ref(x[idx]), y[idx]) + mu / 2 * penalty).backward()
            opt.step()
    for name, value in ref.state_dict().items():
        assert torch.allclose(update.params[name], value, atol=1e-6)
