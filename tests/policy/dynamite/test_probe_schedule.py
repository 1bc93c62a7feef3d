"""``dynamite.probe``: tasks carry the probes until a round's pooled probe moves the smoothed
estimate by no more than its own standard error; then the estimates are held and no task, and
no priced round, pays for a probe. Expected values are worked by hand in the comments."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.policy.dynamite.probe_schedule import pooled, probing_ids, sample_size, settled
from fedfit.types import TaskCost, TaskResult, TrainPlan, Update
from tests.helpers import profile, state


def test_pooled_mean_and_standard_error_by_share() -> None:
    # weights 1, 3; values 8, 4: mean (8 + 12)/4 = 5; s² = (1·9 + 3·1)/4 = 3; n = 16/10 = 1.6;
    # SE = √(3 / 1.6) = √1.875.
    mean, error = pooled({1: 8.0, 2: 4.0}, {1: 1.0, 2: 3.0}) or (0.0, 0.0)
    assert mean == pytest.approx(5.0)
    assert error == pytest.approx(math.sqrt(1.875))
    assert pooled({}, {1: 1.0}) is None
    assert pooled({7: 2.0}, {1: 1.0}) is None  # a probe without a share counts for nothing


def test_settled_when_the_probe_is_within_its_standard_error_of_the_estimate() -> None:
    probes, shares = {1: 8.0, 2: 4.0}, {1: 1.0, 2: 3.0}  # mean 5, SE √1.875 ≈ 1.369
    assert settled(5.0 + 1.36, probes, shares)
    assert settled(5.0 - 1.36, probes, shares)
    assert not settled(5.0 + 1.38, probes, shares)
    assert not settled(None, probes, shares)  # nothing to compare with yet
    assert not settled(5.0, {}, shares)
    assert settled(5.0, {1: 5.0, 2: 5.0}, {1: 1.0, 2: 1.0})  # equal probes: SE 0, |5 − 5| ≤ 0


def test_sample_size_is_the_fewest_probes_whose_error_is_within_the_move() -> None:
    # probes 2, 6 at equal shares: mean 4, s² = 4 (per probe), SE √2.
    probes, shares = {1: 2.0, 2: 6.0}, {1: 1.0, 2: 1.0}
    assert sample_size(None, probes, shares, 8) == 8  # nothing to compare: all probe
    assert sample_size(3.0, probes, shares, 8) == 0  # |4 − 3| = 1 ≤ √2: settled
    assert sample_size(2.5, probes, shares, 8) == 2  # Δ = 1.5: ⌈4 / 2.25⌉ = 2
    assert sample_size(2.4, probes, shares, 8) == 2  # Δ = 1.6: ⌈4 / 2.56⌉ = 2
    assert sample_size(0.0, {1: 0.0, 2: 6.0, 3: 12.0}, {1: 1.0, 2: 1.0, 3: 1.0}, 8) == 2  # s² = 24, Δ = 6: 1 → 2
    # weights 1, 3, values 8, 4: s² = 3, mean 5, SE ≈ 1.369; Δ = 5 − 4.5 = 0.5 ≤ SE: settled.
    assert sample_size(4.5, {1: 8.0, 2: 4.0}, {1: 1.0, 2: 3.0}, 8) == 0
    # Δ = 5 − 3.5 = 1.5 > 1.369: ⌈3 / 2.25⌉ = 2; Δ = 1.4: ⌈3 / 1.96⌉ = 2; at a fleet of 1 k is 1.
    assert sample_size(3.5, {1: 8.0, 2: 4.0}, {1: 1.0, 2: 3.0}, 8) == 2
    assert sample_size(3.5, {1: 8.0, 2: 4.0}, {1: 1.0, 2: 3.0}, 1) == 1
    # a wide spread and a small move that still exceeds SE: s² = 100 (probes 0, 20), SE √50 ≈ 7.07,
    # Δ = 7.5: ⌈100 / 56.25⌉ = 2; four probes 0, 20, 0, 20: SE 5, Δ = 5.5: ⌈100 / 30.25⌉ = 4.
    assert sample_size(2.5, {1: 0.0, 2: 20.0}, {1: 1.0, 2: 1.0}, 8) == 2
    four = {1: 0.0, 2: 20.0, 3: 0.0, 4: 20.0}
    assert sample_size(4.5, four, dict.fromkeys(four, 1.0), 8) == 4


def test_probing_ids_take_the_fleet_in_turn() -> None:
    ids = [10, 11, 12, 13, 14]
    assert [sorted(probing_ids(ids, 2, t)) for t in range(4)] == [[10, 11], [12, 13], [10, 14], [11, 12]]
    assert probing_ids(ids, 0, 3) == frozenset() and probing_ids(ids, 9, 1) == frozenset(ids)


def _results(version: int, sigma2: tuple[float, float], curvature: tuple[float, float]) -> list[TaskResult]:
    cost = TaskCost(0.5, 1.0, 0.5, 3.0, 0, 0, 0, 0.0)
    return [TaskResult(TrainPlan(d, version, micro_batch=4, lr=0.1, sigma_probe=True), "test", 0.0, 2.0, Update(
        d, version, {"w": torch.full((3,), 0.1 * (d + 1) + version)}, 100, 40, 10, 4, 1, 1.0,
        sigma2=sigma2[d], noise_curvature=curvature[d]), cost, 0) for d in (0, 1)]


def _planner(schedule: str) -> DynamitePlanner:
    from tests.policy.dynamite.test_reachable import fleet_planner

    p = fleet_planner(offline=set())
    p.settings = dataclasses.replace(p.settings, sigma_probe=True, noise_model="curvature", holding=0.5,
                                     probe_schedule=schedule)  # type: ignore[arg-type]
    return p


def test_until_settled_stops_the_probes_and_their_price_and_holds_the_estimates() -> None:
    p = _planner("until_settled")
    # round 1: σ² probes 2, 6 (equal shares): mean 4, SE √(4/2) = √2; no estimate before: probe on.
    p.observe(1, {"w": torch.zeros(3)}, _results(0, (2.0, 6.0), (1.0, 3.0)), 1.0)
    assert p.probes() == (True, True) and p.estimator.sigma2 == pytest.approx(4.0)
    assert p._device(0, 40).probe_s(4) > 0
    # round 2: σ² 3, 6: mean 4.5, SE √(2.25/2) ≈ 1.06 ≥ |4.5 − 4|; curvature 1.5, 2.5: mean 2 = the
    # estimate (SE √(0.25/2)).
    p.observe(2, {"w": torch.ones(3)}, _results(1, (3.0, 6.0), (1.5, 2.5)), 2.0)
    assert p.probes() == (False, False)
    assert not p.plan(0, 2, profile(), state()).sigma_probe
    cost = p._device(0, 40)
    assert not cost.sigma_probe and cost.probe_s(4) == 0.0
    assert cost.round_s(5, 4) == pytest.approx(5 * cost.step_s(4) + cost.comm_s)  # no probe priced
    held = p.estimator.sigma2, p.estimator.noise_curvature  # 0.5·4 + 0.5·4.5 = 4.25; 2
    assert held == pytest.approx((4.25, 2.0))
    # round 3 without probes: σ² and β_σ are held, not re-read from the pseudo-gradients.
    unprobed = [dataclasses.replace(r, outcome=dataclasses.replace(r.outcome, sigma2=None, noise_curvature=None))
                for r in _results(2, (0.0, 0.0), (0.0, 0.0))]
    p.observe(3, {"w": 2 * torch.ones(3)}, unprobed, 3.0)
    assert (p.estimator.sigma2, p.estimator.noise_curvature) == pytest.approx(held)
    assert p.probes() == (False, False)


def test_a_moving_estimate_keeps_the_probes_on() -> None:
    for schedule, moving in (("until_settled", (8.0, 12.0)), ("every_round", (3.0, 6.0))):
        p = _planner(schedule)
        p.observe(1, {"w": torch.zeros(3)}, _results(0, (2.0, 6.0), (1.0, 3.0)), 1.0)
        # until_settled: mean 10, SE √2 < |10 − 4|; every_round never stops.
        p.observe(2, {"w": torch.ones(3)}, _results(1, moving, (1.5, 2.5)), 2.0)
        assert p.probes() == (True, True)
        assert p.plan(0, 2, profile(), state()).sigma_probe


def test_config_knob_reaches_the_planner() -> None:
    from fedfit.experiment import built
    from tests.policy.dynamite.test_dynamite_end_to_end import small

    assert small().dynamite.probe == "every_round"
    with built(small(dynamite={"probe": "until_settled"})) as exp:
        planner = exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner)
        assert planner.settings.probe_schedule == "until_settled"


def test_sampled_prices_each_device_with_its_own_plans_probes() -> None:
    p = _planner("sampled")
    fleet = p.registry.ids()
    assert len(fleet) >= 3
    p.observe(1, {"w": torch.zeros(3)}, _results(0, (2.0, 6.0), (1.0, 3.0)), 1.0)
    assert p.probing is None  # nothing before round 1 to compare with: every device
    # round 2: σ² probes 20, 24: mean 22, s² = 4, SE √2; estimate 4, Δ = 18: ⌈4/324⌉ = 1 → 2.
    # curvature 9, 11: mean 10, s² = 1; estimate 2, Δ = 8: 1 → 2. k = 2 of the fleet, in turn
    # (turn 2: the sorted fleet's ids from position 4 mod n).
    p.observe(2, {"w": torch.ones(3)}, _results(1, (20.0, 24.0), (9.0, 11.0)), 2.0)
    assert p.probing == 2
    order = sorted(fleet)
    chosen = {order[(4 + j) % len(order)] for j in range(2)}
    for d in fleet:
        carries = d in chosen
        assert p.plan(d, 2, profile(), state()).sigma_probe is carries
        assert p.probes(d) == (carries, carries)
        assert (p._device(d, 40).probe_s(4) > 0) is carries
