"""DP-FedAvg at the server: clipped unweighted sums per holder count, noise of σ·S, seeded by the master."""

from __future__ import annotations

import torch

from fedfit.aggregation import Contribution
from fedfit.security.central_dp import CentralDP

T, F = True, False


def test_without_noise_it_is_the_mean_of_clipped_deltas_over_each_coordinates_holders() -> None:
    master = {"w": torch.tensor([1.0, 1.0, 1.0])}
    a = Contribution({"w": torch.tensor([4.0, 5.0, 1.0])}, 100.0)            # Δ (3, 4, 0): norm 5 → (0.6, 0.8, 0)
    b = Contribution({"w": torch.tensor([1.5, 9.0, 9.0])}, 1.0, {"w": torch.tensor([T, F, F])})  # Δ (0.5): kept
    out = CentralDP(clip_norm=1.0, noise_multiplier=0.0)(master, [a, b])["w"]
    assert torch.allclose(out, torch.tensor([1.0 + (0.6 + 0.5) / 2, 1.8, 1.0]))


def test_noise_has_standard_deviation_sigma_times_clip_over_the_holder_count() -> None:
    master = {"w": torch.zeros(20000)}
    zero = [Contribution({"w": torch.zeros(20000)}, 1.0) for _ in range(2)]
    out = CentralDP(clip_norm=0.5, noise_multiplier=4.0, seed=1)(master, zero)["w"]
    assert abs(float(out.std()) - 4.0 * 0.5 / 2) < 0.03


def test_same_master_and_seed_draw_the_same_noise_and_another_seed_does_not() -> None:
    master = {"w": torch.zeros(10)}
    cs = [Contribution({"w": torch.ones(10)}, 1.0)]
    first = CentralDP(1.0, 1.0, seed=3)(master, cs)["w"]
    assert torch.equal(first, CentralDP(1.0, 1.0, seed=3)(master, cs)["w"])
    assert not torch.equal(first, CentralDP(1.0, 1.0, seed=4)(master, cs)["w"])


def test_coordinates_nobody_holds_keep_their_value_without_noise() -> None:
    master = {"w": torch.tensor([2.0, 2.0])}
    c = Contribution({"w": torch.tensor([3.0, 0.0])}, 1.0, {"w": torch.tensor([T, F])})
    assert float(CentralDP(1.0, 5.0)(master, [c])["w"][1]) == 2.0
