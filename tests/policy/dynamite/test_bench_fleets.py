"""The fleets bench/dynamite.py --config runs outside the example parse and declare what the bench needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedfit.config import load_config
from fedfit.strategies import apply_strategy

ROOT = Path(__file__).resolve().parents[3]
FLEETS = sorted((ROOT / "bench").glob("dynamite_fleet_*.yaml"))
# the strategies bench/dynamite.py's summary line needs (its GRID, the default and online DYNAMITE)
NEEDED = ["batch32-epoch1", "dynamite-online", "grid-b8-t50", "grid-b32-t5", "grid-b32-t20", "grid-b32-t50",
          "grid-b128-t50"]


def test_there_are_fleets_outside_the_example() -> None:
    assert {p.name for p in FLEETS} >= {"dynamite_fleet_wearables.yaml", "dynamite_fleet_vehicles.yaml",
                                        "dynamite_fleet_unequal.yaml", "dynamite_fleet_wearables_stream.yaml"}


@pytest.mark.parametrize("path", FLEETS, ids=lambda p: p.stem)
def test_fleet_config_runs_every_strategy_the_bench_needs(path: Path) -> None:
    config = load_config(path)
    example = load_config(ROOT / "examples" / "dynamite.yaml")
    assert config.fleet.tiers != example.fleet.tiers  # another fleet, not the example's
    assert config.dynamite.mode == "heterogeneous"
    for name in NEEDED:
        applied = apply_strategy(config, name)
        if name.startswith("grid-"):
            b, t = name.removeprefix("grid-b").split("-t")
            assert (applied.dynamite.mode, applied.training.batch_size, applied.training.max_steps) == ("off", int(b), int(t))
