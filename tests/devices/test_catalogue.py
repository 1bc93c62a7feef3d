"""The built-in tier catalogue."""

import pytest

from fedfit.devices.catalogue import (
    FLAGSHIP_TRAINING_MEMORY_BYTES,
    MIDRANGE_TRAINING_MEMORY_BYTES,
    OLDER_TRAINING_MEMORY_BYTES,
    TIERS,
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
