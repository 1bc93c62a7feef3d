"""Weighting schemes, staleness discounts and server steps plugged into the one average."""

import pytest
import torch

from fedfit.aggregation import AggregationRule, Arrival, StalenessDiscount, aggregate, server_step, weighting
from fedfit.types import Update


def _update(value: float, *, samples: int = 10, steps: int = 1, micro: int = 8) -> Update:
    return Update(0, 0, {"w": torch.tensor([value])}, samples, samples, steps, micro, 1, 0.0)


def test_default_rule_is_fedavg_by_samples() -> None:
    master = {"w": torch.tensor([0.0])}

    out = aggregate(master, [Arrival(_update(1.0, samples=10)), Arrival(_update(4.0, samples=30))])

    assert out["w"].item() == pytest.approx(3.25)  # (10·1 + 30·4)/40


def test_steps_and_batch_size_weightings_by_hand() -> None:
    master = {"w": torch.tensor([0.0])}
    arrivals = [Arrival(_update(1.0, steps=1, micro=4)), Arrival(_update(4.0, steps=3, micro=12))]

    by_steps = aggregate(master, arrivals, AggregationRule(weighting=weighting("steps")))
    by_batch = aggregate(master, arrivals, AggregationRule(weighting=weighting("batch")))

    assert by_steps["w"].item() == pytest.approx((1 + 12) / 4)
    assert by_batch["w"].item() == pytest.approx((4 + 48) / 16)


@pytest.mark.parametrize(("kind", "staleness", "expected"), [
    ("constant", 7, 1.0), ("polynomial", 3, 0.5), ("polynomial", 0, 1.0),
    ("hinge", 4, 1.0), ("hinge", 6, 1 / 21),
])
def test_staleness_discounts_by_formula(kind: str, staleness: int, expected: float) -> None:
    s = StalenessDiscount(kind, exponent=0.5, hinge_a=10.0, hinge_b=4)  # type: ignore[arg-type]

    assert s(staleness) == pytest.approx(expected)


def test_fedasync_mixing_with_known_staleness() -> None:
    master = {"w": torch.tensor([2.0])}
    rule = AggregationRule(staleness=StalenessDiscount("polynomial", exponent=0.5), server_lr=0.5)

    out = aggregate(master, [Arrival(_update(10.0), staleness=3)], rule)

    # α_t = 0.5 · (3 + 1)^−0.5 = 0.25; x = 0.75·2 + 0.25·10
    assert out["w"].item() == pytest.approx(4.0)


def test_fedbuff_buffer_staleness_weights_and_server_lr_by_hand() -> None:
    master = {"w": torch.tensor([0.0])}
    rule = AggregationRule(weighting=weighting("uniform"), staleness=StalenessDiscount("polynomial", exponent=1.0),
                           server_lr=0.8)
    arrivals = [Arrival(_update(3.0), staleness=0), Arrival(_update(6.0), staleness=2)]

    out = aggregate(master, arrivals, rule)

    # s = (1, 1/3); FedBuff: x + η_g · Σ s_i Δ_i / K = 0.8 · (3 + 2)/2
    assert out["w"].item() == pytest.approx(2.0)


def test_server_step_moves_a_fraction_and_keeps_integers() -> None:
    master = {"w": torch.tensor([0.0, 10.0]), "n": torch.tensor(3)}
    target = {"w": torch.tensor([4.0, 2.0]), "n": torch.tensor(5)}

    out = server_step(master, target, 0.5)

    assert out["w"].tolist() == [2.0, 6.0]
    assert out["n"].item() == 5


def test_arrivals_as_columns_fold_by_hand() -> None:
    from fedfit.aggregation import Arrivals, aggregate_columns

    master = {"w": torch.tensor([0.0])}
    a = Update(0, 3, {"w": torch.tensor([2.0])}, 1, 1, 1, 1, 1, 0.0)
    b = Update(1, 2, {"w": torch.tensor([9.0])}, 3, 3, 1, 1, 1, 0.0)
    rule = AggregationRule(staleness=StalenessDiscount("polynomial", exponent=1.0))
    # b arrives in master coordinates as 4.0 (its own params ignored), one version stale (discount 1/2),
    # participation 1/3: weights 1·1·1 = 1 and 3·(1/3)·(1/2) = 0.5; the mean moves by the mean discount 0.75
    columns = Arrivals([a, b], [1.0, 3.0], [0, 1], [None, {"w": torch.tensor([4.0])}], [None, None], [1.0, 1 / 3])
    expected = 0.75 * (2.0 * 1.0 + 4.0 * 0.5) / 1.5
    assert aggregate_columns(master, rule, columns)["w"].item() == pytest.approx(expected)
    arrivals = [Arrival(a), Arrival(b, staleness=1, params={"w": torch.tensor([4.0])}, participation=1 / 3)]
    assert torch.equal(aggregate(master, arrivals, rule)["w"], aggregate_columns(master, rule, columns)["w"])
