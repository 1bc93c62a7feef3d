"""The built-in tier catalogue and user tiers from mappings."""

import pytest

from fedfit.devices.catalogue import (
    FLAGSHIP_TRAINING_MEMORY_BYTES,
    MIDRANGE_TRAINING_MEMORY_BYTES,
    OLDER_TRAINING_MEMORY_BYTES,
    TIERS,
    profile_from_mapping,
    tier,
)
from fedfit.errors import ConfigError
from fedfit.types import Link

EXPECTED_TIERS = {
    "flagship_phone",
    "midrange_phone",
    "older_phone",
    "tablet",
    "smartwatch",
    "sensor_mcu",
    "vehicle_computer",
}


def test_catalogue_has_the_seed_tiers() -> None:
    assert set(TIERS) == EXPECTED_TIERS


@pytest.mark.parametrize("name", sorted(EXPECTED_TIERS))
def test_every_tier_is_physically_consistent(name: str) -> None:
    profile = TIERS[name]

    assert profile.tier == name
    assert 0 < profile.training_memory_bytes <= profile.total_memory_bytes
    assert profile.flops_per_s > 0
    assert 0 < profile.utilisation.peak <= 1 and profile.utilisation.half_batch >= 0
    assert profile.battery_capacity_j is None or profile.battery_capacity_j > 0
    assert profile.compute_power_w > 0 and profile.radio_power_w > 0 and profile.latency_s >= 0
    assert profile.radios and Link.OFFLINE not in profile.radios


def test_catalogue_is_read_only() -> None:
    with pytest.raises(TypeError):
        TIERS["mine"] = TIERS["tablet"]  # type: ignore[index]


def test_phone_tiers_are_ordered_by_memory_and_compute() -> None:
    phones = [tier("flagship_phone"), tier("midrange_phone"), tier("older_phone")]

    for bigger, smaller in zip(phones, phones[1:]):
        assert bigger.total_memory_bytes > smaller.total_memory_bytes
        assert bigger.training_memory_bytes > smaller.training_memory_bytes
        assert bigger.flops_per_s > smaller.flops_per_s


def test_phone_ram_matches_the_scenario() -> None:
    assert tier("flagship_phone").total_memory_bytes == 8 * 2**30
    assert tier("midrange_phone").total_memory_bytes == 4 * 2**30
    assert tier("older_phone").total_memory_bytes == 2 * 2**30


def test_phone_training_memory_uses_the_calibrated_constants() -> None:
    # the calibration itself is checked against the memory model in tests/cost/test_calibration.py
    assert FLAGSHIP_TRAINING_MEMORY_BYTES > MIDRANGE_TRAINING_MEMORY_BYTES > OLDER_TRAINING_MEMORY_BYTES
    assert tier("flagship_phone").training_memory_bytes == FLAGSHIP_TRAINING_MEMORY_BYTES
    assert tier("midrange_phone").training_memory_bytes == MIDRANGE_TRAINING_MEMORY_BYTES
    assert tier("older_phone").training_memory_bytes == OLDER_TRAINING_MEMORY_BYTES


def test_sensor_is_a_512_kb_mcu_on_low_band_cellular() -> None:
    sensor = tier("sensor_mcu")

    assert sensor.total_memory_bytes == 512 * 1024
    assert sensor.training_memory_bytes == 384 * 1024
    assert sensor.radios == (Link.CELLULAR,)


def test_vehicle_is_mains_powered_with_wifi_and_cellular() -> None:
    vehicle = tier("vehicle_computer")

    assert vehicle.battery_capacity_j is None
    assert set(vehicle.radios) == {Link.WIFI, Link.CELLULAR}


def test_smartwatch_battery_is_about_1_1_wh() -> None:
    assert tier("smartwatch").battery_capacity_j == pytest.approx(1.1 * 3600.0)


def test_unknown_tier_error_lists_the_known_tiers() -> None:
    with pytest.raises(ConfigError) as err:
        tier("nope")

    message = str(err.value)
    assert message.startswith("unknown device tier 'nope' (known: ")
    assert all(name in message for name in EXPECTED_TIERS)


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
