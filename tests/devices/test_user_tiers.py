"""User tiers from mappings (``fleet.custom_tiers``)."""

import pytest

from fedfit.devices.catalogue import tier
from fedfit.devices.user_tiers import profile_from_mapping
from fedfit.errors import ConfigError
from fedfit.types import Link


def test_user_tier_inherits_from_its_base_and_overrides_given_keys() -> None:
    profile = profile_from_mapping(
        "rugged_phone", {"base": "midrange_phone", "flops_per_s": 5e10, "cpu_cores": 4}
    )
    parent = tier("midrange_phone")

    assert profile.tier == "rugged_phone"
    assert profile.flops_per_s == 5e10 and profile.cpu_cores == 4
    assert profile.total_memory_bytes == parent.total_memory_bytes
    assert profile.battery_capacity_j == pytest.approx(parent.battery_capacity_j)
    assert profile.utilisation == parent.utilisation
    assert profile.radios == parent.radios


def test_user_tier_inherits_from_a_base_profile_given_by_the_caller() -> None:
    parent = profile_from_mapping("a", {"base": "tablet", "latency_s": 0.5})

    child = profile_from_mapping("b", {"radio_power_w": 0.1}, base=parent)

    assert (child.tier, child.latency_s, child.radio_power_w) == ("b", 0.5, 0.1)


@pytest.mark.parametrize(
    ("key", "value", "expected_bytes"),
    [
        ("training_memory_bytes", 1000, 1000),
        ("training_memory_kb", 3, 3 * 1024),
        ("training_memory_mb", 1.5, 3 * 2**19),
    ],
)
def test_memory_unit_suffixes_convert_to_bytes(key: str, value: float, expected_bytes: int) -> None:
    profile = profile_from_mapping("t", {"base": "smartwatch", key: value})

    assert profile.training_memory_bytes == expected_bytes


def test_full_spec_without_base_builds_a_mains_device() -> None:
    spec = {
        "total_memory_mb": 2048,
        "training_memory_mb": 32,
        "flops_per_s": 1e11,
        "utilisation_peak": 0.5,
        "utilisation_half_batch": 4,
        "battery_wh": None,
        "compute_power_w": 10,
        "radio_power_w": 1,
        "latency_s": 0.01,
        "radios": ["wifi"],
        "has_npu": True,
    }

    profile = profile_from_mapping("gateway", spec)

    assert profile.total_memory_bytes == 2048 * 2**20
    assert profile.training_memory_bytes == 32 * 2**20
    assert profile.battery_capacity_j is None
    assert profile.radios == (Link.WIFI,)
    assert (profile.cpu_cores, profile.has_npu) == (1, True)


def test_battery_wh_converts_to_joules() -> None:
    profile = profile_from_mapping("t", {"base": "vehicle_computer", "battery_wh": 2})

    assert profile.battery_capacity_j == 7200.0


@pytest.mark.parametrize(
    ("spec", "key"),
    [
        ({"base": "tablet", "colour": "red"}, "colour"),
        ({"base": "tablet", "total_memory_mb": -4}, "total_memory_mb"),
        ({"base": "tablet", "training_memory_mb": 8192}, "training_memory_mb"),
        ({"base": "tablet", "total_memory_kb": 1}, "total_memory_kb"),
        ({"base": "tablet", "flops_per_s": "fast"}, "flops_per_s"),
        ({"base": "tablet", "flops_per_s": 0}, "flops_per_s"),
        ({"base": "tablet", "utilisation_peak": 1.5}, "utilisation_peak"),
        ({"base": "tablet", "battery_wh": True}, "battery_wh"),
        ({"base": "tablet", "radios": ["lora"]}, "radios"),
        ({"base": "tablet", "radios": "wifi"}, "radios"),
        ({"base": "tablet", "cpu_cores": 0}, "cpu_cores"),
        ({"base": "tablet", "has_npu": "yes"}, "has_npu"),
        ({"base": "tablet", "training_memory_mb": 1, "training_kb": 1}, "training_kb"),
        (
            {"base": "tablet", "training_memory_mb": 1, "training_memory_kb": 1},
            "training_memory_[km]b",
        ),
        ({"base": "toaster"}, "base"),
        ({"total_memory_mb": 1}, "training_memory_mb"),
    ],
)
def test_bad_user_tier_names_the_key(spec: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError, match=rf"^tiers\.mytier\.{key}: "):
        profile_from_mapping("mytier", spec)


def test_base_key_and_base_argument_together_are_rejected() -> None:
    with pytest.raises(ConfigError, match=r"^tiers\.t\.base: "):
        profile_from_mapping("t", {"base": "tablet"}, base=tier("smartwatch"))


def test_readme_custom_tier_with_yaml_1_1_exponent_is_accepted() -> None:
    import yaml

    # PyYAML (YAML 1.1) reads 1.0e10 as the string '1.0e10'
    spec = yaml.safe_load("base: older_phone\ntraining_memory_mb: 3\nflops_per_s: 1.0e10\nbattery_wh: 12\n")
    assert spec["flops_per_s"] == "1.0e10"

    p = profile_from_mapping("budget_phone", spec)

    assert p.flops_per_s == 1e10 and p.training_memory_bytes == 3 * 2**20


@pytest.mark.parametrize("bad", ["fast", "1e", "nan", "inf", "-1e3"])
def test_strings_that_are_not_positive_finite_numbers_are_rejected(bad: str) -> None:
    with pytest.raises(ConfigError, match="tiers.t.flops_per_s"):
        profile_from_mapping("t", {"base": "older_phone", "flops_per_s": bad})
