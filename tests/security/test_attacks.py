"""Simulated attacks: poisoned updates and data against hand-computed results; who attacks."""

from __future__ import annotations

import pytest
import torch

from fedfit.config import parse_config
from fedfit.errors import ConfigError
from fedfit.inputs import fleet_profiles
from fedfit.security.attacks import AttackSpec, add_trigger, backdoor_success, poison_data, poison_update
from fedfit.security.builders import attack_spec, check_security
from fedfit.types import Update

SENT = {"w": torch.tensor([1.0, 1.0]), "n": torch.tensor(4)}


def _update(values: list[float]) -> Update:
    return Update(3, 2, {"w": torch.tensor(values), "n": torch.tensor(4)}, 10, 10, 1, 10, 1, 0.5)


def test_scaled_update_multiplies_the_delta() -> None:
    out = poison_update(AttackSpec("scale", frozenset({3}), scale=10.0), _update([1.5, 0.0]), SENT)
    assert torch.allclose(out.params["w"], torch.tensor([6.0, -9.0]))   # 1 + 10·(0.5, −1)
    assert torch.equal(out.params["n"], SENT["n"]) and out.samples_processed == 10


def test_sign_flip_reverses_and_scales_the_delta() -> None:
    out = poison_update(AttackSpec("sign_flip", frozenset({3}), scale=2.0), _update([1.5, 0.0]), SENT)
    assert torch.allclose(out.params["w"], torch.tensor([0.0, 3.0]))    # 1 − 2·(0.5, −1)


def test_random_update_has_scale_times_the_honest_norm() -> None:
    out = poison_update(AttackSpec("random", frozenset({3}), scale=3.0), _update([4.0, 5.0]), SENT)
    assert float((out.params["w"] - SENT["w"]).norm()) == pytest.approx(3.0 * 5.0)


def test_label_flip_maps_each_label_to_its_mirror() -> None:
    _, y = poison_data(AttackSpec("label_flip", frozenset({0})), 0, 0, torch.zeros(3, 2), torch.tensor([0, 4, 9]), 10)
    assert torch.equal(y, torch.tensor([9, 5, 0]))


def test_backdoor_triggers_and_relabels_the_poisoned_fraction() -> None:
    x, y = torch.zeros(10, 1, 28, 28), torch.full((10,), 3)
    spec = AttackSpec("backdoor", frozenset({0}), poison_fraction=0.4, target_class=7)
    x2, y2 = poison_data(spec, 0, 0, x + 0.5, y, 10)
    poisoned = y2 == 7
    assert int(poisoned.sum()) == 4
    assert bool((x2[poisoned][..., -4:, -4:] == 0.5).all()) and bool((x2[~poisoned] == 0.5).all())


@pytest.mark.parametrize(("side", "square"), [(28, 4), (8, 2)])
def test_trigger_stamps_a_bottom_right_square_a_seventh_of_the_side(side: int, square: int) -> None:
    x = torch.zeros(1, 1, side, side)
    x[0, 0, 0, 0] = 2.0
    stamped = add_trigger(x)
    assert int((stamped == 2.0).sum()) == 1 + square * square
    assert bool((stamped[0, 0, -square:, -square:] == 2.0).all())


def test_backdoor_success_counts_only_non_target_samples() -> None:
    assert backdoor_success(torch.tensor([7, 7, 1, 7]), torch.tensor([7, 2, 1, 3]), 7) == pytest.approx(2 / 3)


def _config(**attack: object) -> object:
    return parse_config({"fleet": {"tiers": {"flagship_phone": 5, "older_phone": 5}}, "attack": attack})


def test_attackers_are_a_seeded_fraction_plus_named_devices_and_tiers() -> None:
    config = _config(kind="scale", fraction=0.2, devices=[9])
    spec = attack_spec(config, fleet_profiles(config))
    assert len(spec.devices - {9}) in (1, 2) and 9 in spec.devices
    assert spec == attack_spec(config, fleet_profiles(config))
    by_tier = _config(kind="scale", tiers=["older_phone"])
    assert attack_spec(by_tier, fleet_profiles(by_tier)).devices == frozenset(range(5, 10))


@pytest.mark.parametrize(("attack", "message"), [({"devices": [10]}, "attack.devices"),
                                                 ({"tiers": ["toaster"]}, "attack.tiers")])
def test_attackers_outside_the_fleet_are_a_config_error(attack: dict, message: str) -> None:
    config = _config(kind="scale", **attack)
    with pytest.raises(ConfigError, match=message):
        attack_spec(config, fleet_profiles(config))


@pytest.mark.parametrize("raw", [
    {"privacy": {"secure_aggregation": {"enabled": True}}, "aggregation": {"robust": {"rule": "median"}}},
    {"privacy": {"central": {"enabled": True, "noise_multiplier": 1.0}}, "aggregation": {"robust": {"clip": "fixed"}}},
    {"privacy": {"central": {"enabled": True}}},
    {"privacy": {"secure_aggregation": {"enabled": True}}, "orchestration": {"mode": "async"},
     "asynchronous": {"algorithm": "fedasync"}},
    {"privacy": {"local": {"enabled": True}}, "model": {"norm": "batch"}},
])
def test_incompatible_security_settings_are_a_config_error(raw: dict) -> None:
    with pytest.raises(ConfigError, match="privacy"):
        check_security(parse_config(raw))
