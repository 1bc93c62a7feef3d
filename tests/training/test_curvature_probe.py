"""The curvature probe: β_σ = uᵀHu/‖u‖² along the σ² probe's g_A − g_B equals its closed form on a
quadratic objective, leaves σ² and the training it rides on unchanged, and is charged."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fedfit.training.curvature_probe import half_batch_probe
from fedfit.training.probe import half_batch_sigma2
from fedfit.training.trainer import _next_batch, task_generator, train
from fedfit.types import TrainPlan


def half_squared_error(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of ½‖Wx − y‖²: quadratic in W, Hessian I_k ⊗ (1/n) Σ_j x_j x_jᵀ."""
    return 0.5 * ((out - y) ** 2).sum(1).mean()


def test_beta_sigma_equals_the_closed_form_on_a_quadratic() -> None:
    torch.manual_seed(0)
    x, y = torch.randn(12, 4, dtype=torch.float64), torch.randn(12, 3, dtype=torch.float64)
    model = nn.Linear(4, 3, bias=False).double()
    w = model.weight.detach().clone()
    idx, other = torch.tensor([5, 0, 7, 2, 9]), torch.tensor([1, 3, 4, 11])

    def grad(rows: torch.Tensor) -> torch.Tensor:  # ∇_W mean ½‖Wx − y‖² = mean (Wx − y) xᵀ
        xs = x[rows]
        return (xs @ w.T - y[rows]).T @ xs / len(rows)

    u = grad(idx[:2]) - grad(idx[2:])
    hessian_x = x[other].T @ x[other] / len(other)  # H acts on each row of W by (1/n) Σ x xᵀ
    expected = float((u @ hessian_x * u).sum() / (u * u).sum())
    sigma2, curvature = half_batch_probe(model, x, y, idx, other, loss=half_squared_error)
    assert curvature == pytest.approx(expected, rel=1e-10)
    scale = (1 / 2 + 1 / 3) * 12 / 11
    assert sigma2 == pytest.approx(float((u * u).sum()) / scale, rel=1e-10)


def test_a_loss_linear_in_the_weights_has_no_curvature_and_an_unsplittable_batch_no_probe() -> None:
    model = nn.Linear(2, 1, bias=False)
    x, y = torch.randn(6, 2), torch.zeros(6, 1)
    assert half_batch_probe(model, x, y, torch.tensor([0, 1, 2]), torch.tensor([3, 4]),
                            loss=lambda out, _: out.mean())[1] == 0.0
    assert half_batch_probe(model, x, y, torch.tensor([0]), torch.tensor([3])) == (None, None)


def test_sigma2_is_the_plain_probes_and_cross_entropy_curvature_is_positive() -> None:
    torch.manual_seed(1)
    x, y = torch.randn(20, 5), torch.randint(0, 3, (20,))
    model = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))
    idx = torch.tensor([3, 8, 1, 15, 0, 6])
    sigma2, curvature = half_batch_probe(model, x, y, idx, torch.tensor([2, 4, 5, 7, 9, 10]))
    assert sigma2 == pytest.approx(half_batch_sigma2(model, x, y, idx), rel=1e-6)
    assert curvature is not None and curvature > 0


def test_the_hessian_batch_is_the_epochs_second_disjoint_from_the_probed_one() -> None:
    plan = TrainPlan(2, 3, micro_batch=4)
    order = torch.randperm(10, generator=task_generator(7, 2, 3))
    assert torch.equal(_next_batch(10, 4, 7, plan), order[4:8])
    assert torch.equal(_next_batch(6, 4, 7, plan), torch.randperm(6, generator=task_generator(7, 2, 3))[4:])
    assert torch.equal(_next_batch(4, 4, 7, plan), torch.randperm(4, generator=task_generator(7, 2, 3)))


@pytest.mark.parametrize("norm", [False, True])
def test_the_probe_changes_nothing_else_and_is_off_unless_asked(norm: bool) -> None:
    torch.manual_seed(4)
    x, y = torch.randn(20, 5), torch.randint(0, 3, (20,))
    middle: list[nn.Module] = [nn.BatchNorm1d(4), nn.Dropout(0.3)] if norm else []  # running stats, RNG
    model = nn.Sequential(nn.Linear(5, 4), *middle, nn.ReLU(), nn.Linear(4, 3))
    params = {k: v.clone() for k, v in model.state_dict().items()}
    runs = []
    for curvature in (False, True):
        torch.manual_seed(5)
        plan = TrainPlan(0, 1, micro_batch=4, local_epochs=2, lr=0.1, sigma_probe=True, curvature_probe=curvature)
        runs.append(train(model, params, x, y, plan, seed=2))
    plain, probed = runs
    assert plain.noise_curvature is None and probed.noise_curvature is not None
    assert plain.sigma2 == pytest.approx(probed.sigma2, rel=1e-6)
    assert all(torch.equal(plain.params[k], probed.params[k]) for k in plain.params)
    assert (plain.train_loss, plain.start_loss) == (probed.train_loss, probed.start_loss)


def test_the_cost_model_charges_the_curvature_probe_its_hessian_vector_product() -> None:
    from fedfit.cost import MemoryModel, ModelCost, task_cost
    from fedfit.devices.catalogue import tier
    from fedfit.types import DeviceState, Link, Thermal

    cost = ModelCost(7850, 31400, 47100.0, 15700.0, 40.0, 0.0)
    phone, state = tier("midrange_phone"), DeviceState(2**30, 0.5, False, 30.0, Thermal.WARM, Link.WIFI, 4e7, True)
    plan = TrainPlan(0, 0, 16, local_epochs=3, max_steps=5, sigma_probe=True, curvature_probe=True)
    priced = task_cost(plan=plan, profile=phone, state=state, cost=cost, memory=MemoryModel(), num_examples=100,
                       bytes_down=0, bytes_up=0)
    assert priced.flops == 47100.0 * (5 * 16 + 16 + 3 * 16)  # five steps of 16; σ² probe 16, Hessian product 3 × 16
    # (its time and energy: tests/cost/test_probe_work.py)
