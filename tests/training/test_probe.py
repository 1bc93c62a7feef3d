"""The σ² probe: unbiased for the per-sample gradient variance, exactly (enumeration) and through
the trainer's own sampling (simulation), and free for the training it rides on."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from fedfit.training.probe import half_batch_sigma2, probe_scale
from fedfit.training.trainer import train
from fedfit.types import TrainPlan


def zero_linear() -> nn.Linear:
    model = nn.Linear(1, 2)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    return model


# At zero weights the softmax is (½, ½), so the per-sample gradient of sample (x, y) is
# G = [(p − e_y) x, (p − e_y)] with p − e_y = ±(−½, ½): ‖G‖² = x²/2 + 1/2. Each x appears with
# both labels, so the gradients cancel pairwise: ∇F = 0 and σ² = mean ‖G‖² = mean(x²)/2 + 1/2.
X = torch.tensor([[1.0], [1.0], [2.0], [2.0]])
Y = torch.tensor([0, 1, 0, 1])
SIGMA2 = (1 + 1 + 4 + 4) / 4 / 2 + 0.5  # 1.75


@pytest.mark.parametrize("batch", [2, 3, 4])
def test_the_probe_averages_to_the_closed_form_sigma2_over_every_draw(batch: int) -> None:
    model = zero_linear()
    draws = [half_batch_sigma2(model, X, Y, torch.tensor(order[:batch]))
             for order in itertools.permutations(range(len(X)))]
    assert all(d is not None for d in draws)
    assert sum(d for d in draws if d is not None) / len(draws) == pytest.approx(SIGMA2, rel=1e-6)


def test_a_batch_or_a_data_set_of_one_sample_cannot_be_split() -> None:
    model = zero_linear()
    assert half_batch_sigma2(model, X, Y, torch.tensor([2])) is None
    assert half_batch_sigma2(model, X[:1], Y[:1], torch.tensor([0])) is None


def test_the_scale_is_the_finite_population_variance_of_the_half_difference() -> None:
    # D = 3, batch 2: the difference of two distinct samples, E‖x_i − x_j‖² = 2σ²·D/(D − 1) = 3σ²
    assert probe_scale(3, 2) == pytest.approx(3.0)
    assert probe_scale(100, 7) == pytest.approx((1 / 3 + 1 / 4) * 100 / 99)


def brute_sigma2(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """(1/D) Σ_j ‖∇f_j − ∇F‖², one sample at a time."""
    grads = []
    for j in range(len(x)):
        loss = F.cross_entropy(model(x[j:j + 1]), y[j:j + 1])
        grads.append(torch.cat([g.flatten() for g in torch.autograd.grad(loss, list(model.parameters()))]))
    stacked = torch.stack(grads)
    return float(((stacked - stacked.mean(0)) ** 2).sum(1).mean())


def test_the_trainers_probe_is_unbiased_under_its_own_shuffling() -> None:
    torch.manual_seed(3)
    x, y = torch.randn(30, 5), torch.randint(0, 3, (30,))
    model = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 3))
    params = {k: v.clone() for k, v in model.state_dict().items()}
    truth = brute_sigma2(model, x, y)
    reports = []
    for round_ in range(400):  # each round reshuffles: a fresh first batch of 8 of the 30
        plan = TrainPlan(0, round_, micro_batch=8, max_steps=1, lr=0.1, sigma_probe=True)
        got = train(model, params, x, y, plan, seed=11).sigma2
        assert got is not None
        reports.append(got)
    mean = sum(reports) / len(reports)
    spread = (sum((r - mean) ** 2 for r in reports) / (len(reports) - 1) / len(reports)) ** 0.5
    assert abs(mean - truth) < 4 * spread  # within four standard errors of the exact σ²
    assert spread < 0.1 * truth


@pytest.mark.parametrize("norm", [False, True])
def test_the_probe_changes_nothing_else_and_is_off_unless_asked(norm: bool) -> None:
    torch.manual_seed(4)
    x, y = torch.randn(20, 5), torch.randint(0, 3, (20,))
    middle: list[nn.Module] = [nn.BatchNorm1d(4), nn.Dropout(0.3)] if norm else []  # running stats, RNG
    model = nn.Sequential(nn.Linear(5, 4), *middle, nn.ReLU(), nn.Linear(4, 3))
    params = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(5)
    plain = train(model, params, x, y, TrainPlan(0, 1, micro_batch=4, local_epochs=2, lr=0.1), seed=2)
    torch.manual_seed(5)
    probed = train(model, params, x, y, TrainPlan(0, 1, micro_batch=4, local_epochs=2, lr=0.1, sigma_probe=True),
                   seed=2)
    assert plain.sigma2 is None and probed.sigma2 is not None and probed.sigma2 > 0
    assert all(torch.equal(plain.params[k], probed.params[k]) for k in plain.params)
    assert (plain.train_loss, plain.start_loss) == (probed.train_loss, probed.start_loss)


def test_the_cost_model_charges_the_probe_one_forward_backward_of_the_first_batch() -> None:
    from fedfit.cost import MemoryModel, ModelCost, task_cost
    from fedfit.cost.task_costs import task_costs
    from fedfit.devices.catalogue import tier
    from fedfit.types import DeviceState, Link, Thermal

    cost = ModelCost(7850, 31400, 47100.0, 15700.0, 40.0, 0.0)
    phone, state = tier("midrange_phone"), DeviceState(2**30, 0.5, False, 30.0, Thermal.WARM, Link.WIFI, 4e7, True)
    plans = [TrainPlan(0, 0, 16, local_epochs=3, max_steps=5, sigma_probe=p) for p in (False, True)]
    plain, probed = (task_cost(plan=p, profile=phone, state=state, cost=cost, memory=MemoryModel(), num_examples=100,
                               bytes_down=0, bytes_up=0) for p in plans)
    assert plain.flops == 47100.0 * 5 * 16 and probed.flops == 47100.0 * 6 * 16  # five steps of 16, one probe of 16
    assert task_costs(plans, [phone] * 2, [state] * 2, lambda w: cost, MemoryModel(), [100, 100], [0, 0]) == [plain, probed]
