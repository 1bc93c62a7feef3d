"""``dynamite.slack_fill``: devices off the critical path fill their compute slack (policy/dynamite/slack.py)."""

from __future__ import annotations

import math

import pytest
import torch

from fedfit.cost import MemoryModel
from fedfit.devices.registry import Registry
from fedfit.policy import FixedPlanner
from fedfit.policy.dynamite.bound import Budget, Estimates, bound
from fedfit.policy.dynamite.costs import DeviceCost
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.policy.dynamite.settings import DynamiteSettings
from fedfit.policy.dynamite.search import Assignment, batch_grid, search_homogeneous_at
from fedfit.policy.dynamite.slack import fill_slack, slack_filled
from tests.helpers import profile, state
from tests.policy.dynamite.test_reachable import COST, LR, SIZES

EST = Estimates(beta=1.0, rho=1.0, delta=1.0, sigma2=4.0, loss=2.0)
TIME = Budget(time_s=100.0)


def _device(comm_s: float, data: int = 64, power: float = 1.0) -> DeviceCost:
    # no half-saturation: a step of b costs 0.01·b s; joules = power · compute s + 1 W · comm s
    return DeviceCost(sample_s=0.01, half_batch=0.0, comm_s=comm_s, compute_power_w=power, radio_power_w=1.0,
                      micro_cap=64, data_size=data)


def test_a_device_off_the_critical_path_takes_the_largest_grid_batch_within_it() -> None:
    # τ = 2. The straggler: 2·0.01·2 + 1.0 = 1.04 s. The other: 2·0.01·b + 0.1 ≤ 1.04 ⇔ b ≤ 47;
    # grid(64) = 1..8, 10, 11, 13, 16, 19, 23, 27, 32, 38, 45, 54, 64 → 45 (σ²/b: less noise, K kept).
    straggler, fast = _device(1.0), _device(0.1)
    assert batch_grid(64)[-4:] == [38, 45, 54, 64]
    got = fill_slack(2, (2, 2), [straggler, fast], [0.5, 0.5], EST, 0.1, TIME)
    assert got == (2, 45)
    assert bound(2, got, [straggler, fast], [0.5, 0.5], EST, 0.1, TIME) < bound(
        2, (2, 2), [straggler, fast], [0.5, 0.5], EST, 0.1, TIME)


def test_the_fill_stays_within_an_energy_cap() -> None:
    # joules: straggler 2·0.02 + 1.0 = 1.04; the other 0.02·b + 0.1. A cap of 1.5 J leaves
    # 0.46 J for it: b ≤ 18 → grid 16 (its cheaper joules per sample are filled first).
    got = fill_slack(2, (2, 2), [_device(1.0), _device(0.1)], [0.5, 0.5], EST, 0.1, TIME, cap_j=1.5)
    assert got == (2, 16)


def test_ties_go_to_more_samples_and_a_worse_bound_is_never_taken() -> None:
    # Reshuffled epochs over 12 samples, τ = 3: b = 4 (4, 4, 4) and b = 12 (three full-data
    # steps) each cover whole epochs of equal batches: no sampling error, the same Φ. b = 5 … 11
    # leave unequal or partial epochs (noise > 0). A straggler's round of 3·0.01·1 + 0.22 = 0.25 s
    # admits b ≤ 8 (3·0.01·b ≤ 0.25): nothing there is as good as 4, which stays; one of
    # 0.03 + 0.40 = 0.43 s admits 12 (≤ 14, the data), a tie the fill takes.
    def straggler(comm_s: float) -> DeviceCost:
        return DeviceCost(0.01, 0.0, comm_s, 1.0, 1.0, micro_cap=64, data_size=12, reshuffled=True)

    other = DeviceCost(0.01, 0.0, 0.0, 1.0, 1.0, micro_cap=64, data_size=12, reshuffled=True)
    assert [other.noise(1.0, 3, b) for b in (4, 12)] == [0.0, 0.0]
    assert all(other.noise(1.0, 3, b) > 0 for b in range(5, 12))
    assert fill_slack(3, (1, 4), [straggler(0.22), other], [0.5, 0.5], EST, 0.1, TIME) == (1, 4)
    assert fill_slack(3, (1, 4), [straggler(0.40), other], [0.5, 0.5], EST, 0.1, TIME) == (1, 12)


def test_joules_that_cost_rounds_are_not_spent_without_noise_to_cut() -> None:
    # σ² = 0: Φ is F0/(ηKτ) + drift. With a time budget more samples are a tie (K = T / 1.04 s
    # kept) and the slack is filled; with an energy budget every joule lowers K: nothing filled.
    quiet = Estimates(beta=1.0, rho=1.0, delta=1.0, sigma2=0.0, loss=2.0)
    devices = [_device(1.0), _device(0.1)]
    assert fill_slack(2, (2, 2), devices, [0.5, 0.5], quiet, 0.1, TIME) == (2, 45)
    assert fill_slack(2, (2, 2), devices, [0.5, 0.5], quiet, 0.1, Budget(energy_j=50.0)) == (2, 2)


def test_slack_filled_modes() -> None:
    devices, shares = [_device(1.0), _device(0.1)], [0.5, 0.5]
    found = Assignment(2, (2, 2), bound(2, (2, 2), devices, shares, EST, 0.1, TIME))
    assert slack_filled(found, "off", devices, shares, EST, 0.1, TIME, energy_cap=True) is found
    whole = slack_filled(found, "time_share", devices, shares, EST, 0.1, TIME, energy_cap=True)
    assert whole.batches == (2, 45)
    assert whole.bound == pytest.approx(bound(2, (2, 45), devices, shares, EST, 0.1, TIME))
    # within the cap: the best common batch's joules at τ = 2 (σ²/b: both at the largest batch
    # that keeps the slowest round least, traded against K), never above that plan's joules
    capped = slack_filled(found, "within_cap", devices, shares, EST, 0.1, TIME, energy_cap=True)
    common = search_homogeneous_at(2, devices, shares, EST, 0.1, TIME)
    limit = sum(d.round_j(2, b) for d, b in zip(devices, common))
    assert sum(d.round_j(2, b) for d, b in zip(devices, capped.batches)) <= limit * (1 + 1e-12)
    assert capped.batches[0] == 2 and 2 <= capped.batches[1] <= 45
    # without the solver's energy cap (``energy_cap: none``) within_cap fills the whole share
    assert slack_filled(found, "within_cap", devices, shares, EST, 0.1, TIME, energy_cap=False).batches == (2, 45)


def _planner(slack_fill: str) -> DynamitePlanner:
    # device 0 behind a 1 s latency (a ~2 s link per round), devices 1 and 2 on a 0.05 s one
    registry = Registry()
    for d in range(3):
        registry.add(d, profile(flops_per_s=1e9 * (1 + 4 * d), latency_s=1.0 if d == 0 else 0.05))
        registry.report_state(d, state(), 0.0)
    s = DynamiteSettings(budget=Budget(time_s=200.0), tau_max=20, slack_fill=slack_fill)  # type: ignore[arg-type]
    return DynamitePlanner(FixedPlanner(batch_size=32, lr=LR), s, registry=registry, costs=lambda w: COST,
                           memory=MemoryModel(), data_sizes=lambda now_s: SIZES, lr=LR,
                           initial_params={"w": torch.zeros(3)})


def test_the_planner_fills_the_slack_of_its_plan() -> None:
    before, after = _planner("off").current(), _planner("time_share").current()
    p = _planner("off")
    devices = [p._device(d, SIZES[d]) for d in range(3)]
    critical = max(d.round_s(before.tau, b) for d, b in zip(devices, before.batches))
    assert after.tau == before.tau and after.batches[0] == before.batches[0]  # the link-bound straggler
    assert devices[0].round_s(before.tau, before.batches[0]) == critical
    for d, b0, b1 in list(zip(devices, before.batches, after.batches))[1:]:
        # σ²/b (the settings' iid noise): the largest grid batch whose round fits the path
        fits = [g for g in batch_grid(d.batch_cap) if d.round_s(before.tau, g) <= critical * (1 + 1e-12)]
        assert b1 == max(b0, fits[-1]) and b1 > b0
    assert max(d.round_s(after.tau, b) for d, b in zip(devices, after.batches)) == pytest.approx(critical)
    assert after.bound < before.bound and math.isfinite(after.bound)


@pytest.mark.slow
def test_config_key_reaches_the_planner_the_tasks_follow_the_plan_and_bad_values_are_refused() -> None:
    from fedfit.errors import ConfigError
    from tests.policy.dynamite.test_dynamite_end_to_end import _check_tasks_follow_the_plan, small

    planner = _check_tasks_follow_the_plan(small(dynamite={"slack_fill": "time_share"}))
    assert isinstance(planner, DynamitePlanner) and planner.settings.slack_fill == "time_share"
    with pytest.raises((ConfigError, ValueError), match="slack_fill"):
        small(dynamite={"slack_fill": "always"})
