"""The realistic catalogue: budgets a background job gets, calibrated with MobileNetV2-0.5 at 96×96."""

from __future__ import annotations

import dataclasses

import pytest

from fedfit.config import parse_config
from fedfit.cost import MemoryModel, measure
from fedfit.devices import TIERS
from fedfit.devices.realistic import DEFAULT_CATALOGUE, REALISTIC, catalogue
from fedfit.errors import ConfigError
from fedfit.inputs import fleet_profiles
from fedfit.models import ModelSpec
from fedfit.policy.batching import decide_batch
from fedfit.types import BatchRule
from tests.helpers import state

MIB = 2**20
TYPICAL_FREE_SHARE = 0.78  # the generated traces' 25th percentile of free memory (tests/cost/test_calibration.py)
#: The realistic model: MobileNetV2 at width 0.5 on 3×96×96 images with static batch-norm.
MOBILENET = ModelSpec("mobilenetv2", (3, 96, 96), 10, width=0.5, norm="batch")
#: Hand-checked budgets (the module docstring's sources: ~3.7% of RAM on phones, 48 MiB on a watch).
BUDGETS = {"flagship_phone": 300 * MIB, "midrange_phone": 152 * MIB, "older_phone": 80 * MIB,
           "smartwatch": 48 * MIB}


@pytest.mark.parametrize(("tier", "batch"), [("flagship_phone", 32), ("midrange_phone", 16), ("older_phone", 8),
                                             ("smartwatch", 4)])
def test_realistic_tiers_afford_seed_batches_of_mobilenet(tier: str, batch: int) -> None:
    profile = REALISTIC[tier]
    free = int(BUDGETS[tier] * TYPICAL_FREE_SHARE)
    assert profile.training_memory_bytes == BUDGETS[tier]

    decision = decide_batch(profile, state(free_memory_bytes=free), measure(MOBILENET), MemoryModel())

    assert decision.micro_batch == batch
    assert decision.bound_by is BatchRule.MEMORY


def test_realistic_budgets_are_a_few_percent_of_ram_on_phones() -> None:
    shares = [REALISTIC[t].training_memory_bytes / REALISTIC[t].total_memory_bytes
              for t in ("flagship_phone", "midrange_phone", "older_phone", "tablet")]
    assert all(0.035 <= s <= 0.04 for s in shares)


def test_realistic_differs_from_scaled_only_in_training_memory() -> None:
    for name, profile in TIERS.items():
        assert dataclasses.replace(REALISTIC[name], training_memory_bytes=profile.training_memory_bytes) == profile


def test_sensor_mcu_keeps_its_real_384_kib_in_both_catalogues() -> None:
    assert REALISTIC["sensor_mcu"].training_memory_bytes == TIERS["sensor_mcu"].training_memory_bytes == 384 * 2**10


def test_the_config_picks_the_catalogue_and_user_tiers_inherit_from_it() -> None:
    raw = {"fleet": {"catalogue": "realistic", "tiers": {"flagship_phone": 1, "big_watch": 1},
                     "custom_tiers": {"big_watch": {"base": "smartwatch", "flops_per_s": 4e9}}}}
    flagship, watch = fleet_profiles(parse_config(raw))
    assert flagship.training_memory_bytes == 300 * MIB
    assert (watch.training_memory_bytes, watch.flops_per_s) == (48 * MIB, 4e9)


def test_the_default_catalogue_is_realistic() -> None:
    profiles = fleet_profiles(parse_config({"fleet": {"tiers": {"flagship_phone": 1}}}))
    assert profiles[0] == REALISTIC["flagship_phone"]
    assert parse_config({}).fleet.catalogue == DEFAULT_CATALOGUE == "realistic"


def test_the_scaled_catalogue_is_the_small_model_calibration() -> None:
    raw = {"fleet": {"catalogue": "scaled", "tiers": {"flagship_phone": 1}}}
    assert fleet_profiles(parse_config(raw))[0] == TIERS["flagship_phone"]
    assert TIERS["flagship_phone"].training_memory_bytes == 9247 * 2**10


def test_an_unknown_catalogue_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="fleet.catalogue"):
        parse_config({"fleet": {"catalogue": "huge"}})
    with pytest.raises(ConfigError, match="fleet.catalogue: unknown catalogue 'huge'"):
        catalogue("huge")
