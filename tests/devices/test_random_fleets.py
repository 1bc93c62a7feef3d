"""The seeded fleet generator: deterministic per seed, valid, never an example."""

from __future__ import annotations

from pathlib import Path

import yaml

from fedfit.config import parse_config
from fedfit.devices import TIERS
from fedfit.devices.random_fleets import PAIRS, random_fleet, random_fleets

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def footprint(dataset: str, model: str) -> int:
    return 100_000 * (1 + len(dataset) + len(model))


def test_same_seed_same_fleets_other_seed_other_fleets() -> None:
    a = random_fleets(3, 8, list(TIERS), footprint)
    assert a == random_fleets(3, 8, list(TIERS), footprint)
    assert a != random_fleets(4, 8, list(TIERS), footprint)
    assert random_fleet(3, 5, list(TIERS), footprint) == a[5]


def test_eight_fleets_cover_every_pair_and_parse() -> None:
    fleets = random_fleets(7, 8, list(TIERS), footprint)
    assert {(f["data"]["dataset"], f["model"]["name"]) for f in fleets} == set(PAIRS)
    for f in fleets:
        config = parse_config(f)
        assert config.num_devices >= 4 and not config.auto.enabled


def test_custom_tiers_hold_memory_near_the_model_footprint() -> None:
    for f in random_fleets(5, 8, list(TIERS), footprint):
        need = footprint(f["data"]["dataset"], f["model"]["name"])
        custom = f["fleet"]["custom_tiers"]
        assert 1 <= len(custom) <= 2
        for spec in custom.values():
            assert 1.05 * need <= spec["training_memory_bytes"] <= 3.0 * need


def test_datasets_filter_and_never_an_example() -> None:
    names = {yaml.safe_load(p.read_text())["name"] for p in EXAMPLES.glob("*.yaml")}
    mixes = [yaml.safe_load(p.read_text()).get("fleet", {}).get("tiers") for p in EXAMPLES.glob("*.yaml")]
    for f in random_fleets(11, 8, list(TIERS), footprint, datasets=["digits"]):
        assert f["data"]["dataset"] == "digits"
        assert f["name"] not in names and f["fleet"]["tiers"] not in mixes
