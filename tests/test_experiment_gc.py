"""Building a big fleet tunes Python's cyclic garbage collector (at the edge, in ``experiment.build``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from fedfit.config import ExperimentConfig, parse_config
from fedfit.experiment import BIG_FLEET_GC_THRESHOLD, build
from fedfit.inputs import LAZY_TRACES_ABOVE


def _config(devices: int) -> ExperimentConfig:
    return parse_config({
        "seed": 0, "model": {"name": "logreg"},
        "data": {"dataset": "synthetic", "partition": {"kind": "natural"}, "pool": 50,
                 "max_train_samples": 2000, "max_test_samples": 100},
        "fleet": {"tiers": {"flagship_phone": devices}},
        "orchestration": {"rounds": 1, "clients_per_round": 2},
        "output": {"plots": False, "progress": False}})


@pytest.fixture
def default_collector() -> Iterator[tuple[int, int, int]]:
    """The collector at Python's default thresholds, put back as it was afterwards."""
    before = gc.get_threshold()
    gc.unfreeze()  # what an earlier big fleet in this process froze
    gc.set_threshold(700, 10, 10)
    try:
        yield gc.get_threshold()
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_a_fleet_above_the_lazy_threshold_collects_its_young_objects_less_often(
        default_collector: tuple[int, int, int]) -> None:
    build(_config(LAZY_TRACES_ABOVE + 1))

    assert gc.get_threshold() == (BIG_FLEET_GC_THRESHOLD, 10, 10)
    assert gc.get_freeze_count() > LAZY_TRACES_ABOVE  # the fleet's long-lived objects left the scans


def test_a_small_fleet_leaves_the_collector_as_it_is(default_collector: tuple[int, int, int]) -> None:
    build(_config(20))

    assert gc.get_threshold() == default_collector
    assert gc.get_freeze_count() == 0
