"""The masked weighted average against hand computations."""

import torch

from fedfit.aggregation import Contribution, masked_weighted_average


def test_fedavg_is_sample_weighted_mean_by_hand() -> None:
    master = {"w": torch.zeros(2, 2), "b": torch.zeros(2)}
    a = Contribution({"w": torch.full((2, 2), 1.0), "b": torch.tensor([1.0, 2.0])}, weight=10)
    b = Contribution({"w": torch.full((2, 2), 4.0), "b": torch.tensor([4.0, 8.0])}, weight=30)

    out = masked_weighted_average(master, [a, b])

    # (10*1 + 30*4) / 40 = 3.25 ; b: (10*1+30*4)/40 = 3.25, (10*2+30*8)/40 = 6.5
    assert torch.allclose(out["w"], torch.full((2, 2), 3.25))
    assert torch.allclose(out["b"], torch.tensor([3.25, 6.5]))


def test_uncovered_coordinates_keep_master_value() -> None:
    master = {"w": torch.tensor([7.0, 7.0, 7.0])}
    a = Contribution({"w": torch.tensor([1.0, 1.0, 1.0])}, 1.0, {"w": torch.tensor([True, False, False])})
    b = Contribution({"w": torch.tensor([3.0, 3.0, 3.0])}, 3.0, {"w": torch.tensor([True, True, False])})

    out = masked_weighted_average(master, [a, b])

    assert out["w"].tolist() == [2.5, 3.0, 7.0]  # (1+9)/4, only b, nobody


def test_missing_name_and_zero_weight_are_not_held() -> None:
    master = {"w": torch.tensor([1.0]), "v": torch.tensor([5.0])}
    a = Contribution({"w": torch.tensor([3.0])}, 2.0)
    zero = Contribution({"w": torch.tensor([100.0]), "v": torch.tensor([100.0])}, 0.0)

    out = masked_weighted_average(master, [a, zero])

    assert out["w"].item() == 3.0
    assert out["v"].item() == 5.0


def test_integer_buffers_pass_through() -> None:
    master = {"n": torch.tensor(3, dtype=torch.long)}
    out = masked_weighted_average(master, [Contribution({"n": torch.tensor(9)}, 1.0)])
    assert out["n"].item() == 3
