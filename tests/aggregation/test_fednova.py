"""FedNova against hand computations and against plain PyTorch SGD."""

import pytest
import torch

from fedfit.aggregation import AggregationRule, Arrival, LocalSolver, aggregate, normalising_length, weighting
from fedfit.types import Update


def _update(device: int, value: float, steps: int, examples: int = 10) -> Update:
    return Update(device, 0, {"w": torch.tensor([value])}, examples, examples, steps, 8, 1, 0.0)


def test_fednova_two_devices_different_steps_by_hand() -> None:
    master = {"w": torch.tensor([0.0])}
    a = _update(0, -1.0, steps=1)  # moved 1 per step
    b = _update(1, -8.0, steps=4)  # moved 2 per step
    rule = AggregationRule(weighting=weighting("examples"), fednova=LocalSolver())

    out = aggregate(master, [Arrival(a), Arrival(b)], rule)

    # d_a = 1/1, d_b = 8/4; p = (.5, .5); τ_eff = .5·1 + .5·4 = 2.5; x = 0 − 2.5·(.5·1 + .5·2)
    assert out["w"].item() == pytest.approx(-3.75)


def test_fednova_unequal_data_weights_by_hand() -> None:
    master = {"w": torch.tensor([1.0])}
    a = _update(0, 0.0, steps=1, examples=10)
    b = _update(1, -7.0, steps=4, examples=30)
    rule = AggregationRule(weighting=weighting("examples"), fednova=LocalSolver())

    out = aggregate(master, [Arrival(a), Arrival(b)], rule)

    # p = (.25, .75); d = (1, 2); τ_eff = .25 + 3 = 3.25; x = 1 − 3.25·1.75
    assert out["w"].item() == pytest.approx(1 - 3.25 * 1.75)


def test_fednova_equals_fedavg_when_step_counts_are_equal() -> None:
    master = {"w": torch.tensor([0.0])}
    arrivals = [Arrival(_update(0, -2.0, steps=3)), Arrival(_update(1, -5.0, steps=3))]

    nova = aggregate(master, arrivals, AggregationRule(weighting=weighting("examples"), fednova=LocalSolver()))
    avg = aggregate(master, arrivals, AggregationRule(weighting=weighting("examples")))

    assert nova["w"].item() == pytest.approx(avg["w"].item()) == pytest.approx(-3.5)


def _sgd_displacement(steps: int, momentum: float, lr: float, mu: float) -> float:
    """How far plain torch SGD moves on loss g·w (+ μ/2‖w − w0‖²) with g = 1."""
    w = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([w], lr=lr, momentum=momentum)
    for _ in range(steps):
        opt.zero_grad()
        (w.sum() + mu / 2 * (w ** 2).sum()).backward()
        opt.step()
    return -w.item() / lr


@pytest.mark.parametrize(("steps", "momentum", "mu"), [(5, 0.0, 0.0), (5, 0.9, 0.0), (7, 0.0, 0.5)])
def test_normalising_length_is_torch_sgd_displacement_per_unit_gradient(steps: int, momentum: float, mu: float) -> None:
    lr = 0.1
    expected = _sgd_displacement(steps, momentum, lr, mu)

    assert normalising_length(steps, LocalSolver(momentum, lr * mu)) == pytest.approx(expected, rel=1e-5)
