"""Robust rules on masked updates against hand-computed references, and planted outliers rejected.

Four devices on a master w = (0, 0, 0, 7); '·' marks a coordinate the device does not hold:

    a = (1,   1,  1, ·)
    b = (2,   5,  ·, ·)
    c = (3,  12,  4, ·)
    d = (100, ·,  ·, ·)

Coordinate 0 is held by all four (1, 2, 3, 100): median (2+3)/2 = 2.5; the 0.25-trimmed mean
drops one value at each end: (2+3)/2 = 2.5. Coordinate 1 by a, b, c (1, 5, 12): median 5;
⌊0.25·3⌋ = 0 trimmed, mean 6. Coordinate 2 by a, c (1, 4): median and mean 2.5. Coordinate 3 by
nobody: stays 7.
"""

from __future__ import annotations

import torch

from fedfit.aggregation import AggregationRule, Arrival, Contribution, aggregate
from fedfit.aggregation.robust import (
    FLTrust, GeometricMedian, Krum, NormClip, RobustSettings, TrimmedMean, clip_contributions, coordinate_median,
    robust_combine,
)
from fedfit.types import Update

T, F = True, False
MASTER = {"w": torch.tensor([0.0, 0.0, 0.0, 7.0])}


def _c(values: list[float], held: list[bool], weight: float = 1.0) -> Contribution:
    return Contribution({"w": torch.tensor(values, dtype=torch.float32)}, weight, {"w": torch.tensor(held)})


DEVICES = [
    _c([1, 1, 1, 0], [T, T, T, F]),
    _c([2, 5, 0, 0], [T, T, F, F]),
    _c([3, 12, 4, 0], [T, T, T, F]),
    _c([100, 0, 0, 0], [T, F, F, F]),
]


def test_median_of_masked_updates_runs_over_each_coordinates_holders() -> None:
    assert torch.equal(coordinate_median(MASTER, DEVICES)["w"], torch.tensor([2.5, 5.0, 2.5, 7.0]))


def test_trimmed_mean_of_masked_updates_trims_by_each_coordinates_holder_count() -> None:
    assert torch.equal(TrimmedMean(0.25)(MASTER, DEVICES)["w"], torch.tensor([2.5, 6.0, 2.5, 7.0]))


def test_median_ignores_weights_and_zero_weight_contributions() -> None:
    heavy = [Contribution(c.params, 50.0 if i == 3 else 1.0, c.masks) for i, c in enumerate(DEVICES)]
    dropped = [*DEVICES, _c([-1000, -1000, -1000, -1000], [T, T, T, T], weight=0.0)]
    assert torch.equal(coordinate_median(MASTER, heavy)["w"], coordinate_median(MASTER, DEVICES)["w"])
    assert torch.equal(coordinate_median(MASTER, dropped)["w"], coordinate_median(MASTER, DEVICES)["w"])


def test_median_moves_a_nonzero_master_by_the_median_delta() -> None:
    master = {"w": torch.tensor([10.0, 10.0])}
    cs = [Contribution({"w": torch.tensor([v, v])}, 1.0) for v in (11.0, 13.0, 40.0)]
    assert torch.equal(coordinate_median(master, cs)["w"], torch.tensor([13.0, 13.0]))


def _honest(n: int, seed: int = 0) -> list[Contribution]:
    g = torch.Generator().manual_seed(seed)
    return [Contribution({"w": torch.ones(4) + 0.05 * torch.randn(4, generator=g)}, 1.0) for _ in range(n)]


def test_krum_keeps_an_honest_update_when_one_is_planted() -> None:
    cs = [*_honest(6), Contribution({"w": torch.full((4,), -50.0)}, 100.0)]
    out = Krum(byzantine=1)(MASTER, cs)["w"]
    assert torch.allclose(out, torch.ones(4), atol=0.2)


def test_multi_krum_keeps_a_narrow_honest_update_and_drops_the_outlier() -> None:
    narrow = _c([1.0, 0, 0, 0], [T, F, F, F])
    cs = [*_honest(5), narrow, Contribution({"w": torch.full((4,), 60.0)}, 1.0)]
    from fedfit.aggregation.robust.krum import krum_select

    chosen = krum_select(MASTER, cs, byzantine=1, keep=6)
    assert chosen == [0, 1, 2, 3, 4, 5]


def test_fltrust_gives_a_sign_flipped_update_no_weight() -> None:
    honest = _honest(4)
    flipped = Contribution({"w": -10.0 * honest[0].params["w"]}, 1.0)
    rule = FLTrust(lambda master: {"w": torch.ones(4)})
    out = rule({"w": torch.zeros(4)}, [*honest, flipped])["w"]
    # honest updates point along (1,1,1,1) and are rescaled to the root's norm 2: the mean is ≈ 1
    assert torch.allclose(out, torch.ones(4), atol=0.1)


def test_geometric_median_barely_moves_for_a_planted_outlier() -> None:
    honest = _honest(9)
    mean = torch.stack([c.params["w"] for c in honest]).mean(dim=0)
    out = GeometricMedian(iterations=10)({"w": torch.zeros(4)}, [*honest, Contribution({"w": torch.full((4,), 1e4)}, 1.0)])
    assert torch.allclose(out["w"], mean, atol=0.1)


def test_fixed_clipping_scales_a_delta_to_the_bound_over_held_coordinates() -> None:
    master = {"w": torch.tensor([1.0, 1.0, 1.0])}
    c = Contribution({"w": torch.tensor([4.0, 5.0, 99.0])}, 1.0, {"w": torch.tensor([T, T, F])})
    clipped = clip_contributions(master, [c], bound=1.0)[0]   # held delta (3, 4), norm 5
    assert torch.allclose(clipped.params["w"][:2], torch.tensor([1.6, 1.8]))


def test_adaptive_clipping_bounds_updates_at_the_median_norm() -> None:
    master = {"w": torch.zeros(1)}
    cs = [Contribution({"w": torch.tensor([v])}, 1.0) for v in (1.0, 2.0, 30.0)]
    out = NormClip(bound=None, quantile=0.5)(master, cs)   # C = 2: (1 + 2 + 2) / 3
    assert torch.allclose(out["w"], torch.tensor([5.0 / 3.0]))


def test_aggregate_uses_the_rules_combine() -> None:
    updates = [Update(i, 0, {"w": torch.tensor([v])}, 1, 1, 1, 1, 1, 0.0) for i, v in enumerate((1.0, 2.0, 90.0))]
    rule = AggregationRule(combine=robust_combine(RobustSettings(rule="median")))
    assert torch.equal(aggregate({"w": torch.zeros(1)}, [Arrival(u) for u in updates], rule)["w"], torch.tensor([2.0]))


def test_krum_distance_runs_over_shared_coordinates_scaled_to_the_model() -> None:
    from fedfit.aggregation.robust.krum import pairwise_distances

    master = {"w": torch.zeros(4)}
    a = _c([1, 2, 3, 4], [T, T, T, T])
    b = _c([2, 2, 0, 0], [T, T, F, F])
    # shared coordinates 0, 1: squared difference 1 + 0 over 2 shared, scaled to D = 4: 2
    assert float(pairwise_distances(master, [a, b])[0, 1]) == 2.0


def test_fltrust_compares_a_narrow_update_with_the_root_on_its_own_coordinates() -> None:
    master = {"w": torch.zeros(4)}
    root = {"w": torch.tensor([1.0, 1.0, -5.0, 7.0])}
    narrow = _c([3, 3, 0, 0], [T, T, F, F])          # same direction as the root on (0, 1): trust 1
    flipped = _c([-1, -1, 5, -7], [T, T, T, T])      # opposite everywhere: trust 0
    out = FLTrust(lambda m: root)(master, [narrow, flipped])["w"]
    # rescaled to the root's norm on (0, 1), √2: (1, 1); nobody trusted holds 2 and 3
    assert torch.allclose(out, torch.tensor([1.0, 1.0, 0.0, 0.0]))
