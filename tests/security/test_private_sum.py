"""SecAgg with central DP: devices clip before masking, the server noises the unmasked sum; and the
combination rules (SecAgg + robust is a one-line config error, SecAgg + central DP runs)."""

from __future__ import annotations

import pytest
import torch

from fedfit.aggregation import Contribution
from fedfit.config import parse_config
from fedfit.errors import ConfigError
from fedfit.security.builders import check_security
from fedfit.security.central_dp import CentralDP
from fedfit.security.secagg.cohorts import SecureAggregate
from fedfit.security.secagg.private_sum import CohortSums, SecureCentralDP, SummedAggregate

T, F = True, False


def test_without_noise_it_is_the_hand_computed_mean_of_clipped_deltas() -> None:
    master = {"w": torch.tensor([1.0, 1.0, 1.0])}
    a = Contribution({"w": torch.tensor([4.0, 5.0, 1.0])}, 100.0)            # Δ (3, 4, 0): norm 5 → (0.6, 0.8, 0)
    b = Contribution({"w": torch.tensor([1.5, 9.0, 9.0])}, 1.0, {"w": torch.tensor([T, F, F])})  # Δ (0.5): kept
    c = Contribution({"w": torch.tensor([1.0, 1.0, 1.0])}, 1.0)            # Δ 0
    rule = SecureCentralDP(SecureAggregate(min_cohort=1), clip_norm=1.0, noise_multiplier=0.0)
    out = rule(master, [a, b, c])["w"]
    torch.testing.assert_close(out, torch.tensor([1.0 + 1.1 / 3, 1.0 + 0.8 / 2, 1.0]), atol=1e-6, rtol=0)


def test_it_draws_the_same_noise_as_dp_fedavg_on_plain_updates_even_with_dropouts_absent() -> None:
    gen = torch.Generator().manual_seed(5)
    master = {"w": torch.randn(4, 3, generator=gen), "b": torch.randn(4, generator=gen)}
    cs = [Contribution({k: v + torch.randn(v.shape, generator=gen) for k, v in master.items()}, 1.0 + i,
                       {"w": torch.rand(4, 3, generator=gen) > 0.3}) for i in range(5)]
    plain = CentralDP(clip_norm=0.7, noise_multiplier=1.3, seed=2)(master, cs)
    secure = SecureCentralDP(SecureAggregate(min_cohort=3, seed=9), 0.7, 1.3, seed=2)(master, cs)
    for k in master:
        torch.testing.assert_close(secure[k], plain[k], atol=1e-6, rtol=0)


def test_the_deployed_combine_averages_the_sums_it_was_given_and_empties_them() -> None:
    master = {"w": torch.tensor([5.0, 5.0])}
    sums = CohortSums()
    f64 = torch.float64
    sums.add(0, {"w": torch.tensor([6.0, 0.0], dtype=f64)}, {"w": torch.tensor([3.0, 0.0], dtype=f64)})
    sums.add(0, {"w": torch.tensor([2.0, 0.0], dtype=f64)}, {"w": torch.tensor([1.0, 0.0], dtype=f64)})
    out = SummedAggregate(sums)(master, [])["w"]
    assert out.tolist() == [2.0, 5.0]  # (6 + 2) / (3 + 1); nobody held the second coordinate
    assert SummedAggregate(sums)(master, [])["w"].tolist() == [5.0, 5.0]


def secagg(**over: object) -> dict[str, object]:
    return {"privacy": {"secure_aggregation": {"enabled": True}} | over}


@pytest.mark.parametrize("robust", [{"rule": "median"}, {"rule": "krum"}, {"clip": "fixed"}])
def test_secagg_with_a_robust_rule_is_a_one_line_error_saying_why(robust: dict[str, object]) -> None:
    config = parse_config(secagg() | {"aggregation": {"robust": robust}})
    with pytest.raises(ConfigError, match="robust rules need each device's update") as err:
        check_security(config)
    assert "\n" not in str(err.value)


def test_secagg_with_central_dp_is_allowed() -> None:
    check_security(parse_config(secagg(central={"enabled": True, "noise_multiplier": 1.0})))


def test_a_late_cohort_of_an_earlier_round_is_not_folded_into_a_later_one() -> None:
    master = {"w": torch.tensor([0.0])}
    sums = CohortSums()
    one = torch.tensor([1.0], dtype=torch.float64)
    sums.add(3, {"w": 9 * one}, {"w": one})
    sums.add(4, {"w": 2 * one}, {"w": one})
    assert SummedAggregate(sums)(master, [])["w"].tolist() == [2.0]
