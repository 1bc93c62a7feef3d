"""auto decides from what a deployment knows, never from a tier's or a data set's name (issue 11
point 5): renaming every tier and naming another data set leaves the decision unchanged."""

from __future__ import annotations

import dataclasses
import functools

from fedfit.autoconfig import resolve
from fedfit.config import parse_config
from fedfit.cost import MemoryModel, measure
from fedfit.devices import TIERS
from fedfit.models import ModelSpec
from tests.helpers import state

SPEC = ModelSpec("cnn", (1, 28, 28), 10)
FLEET = [TIERS["midrange_phone"]] * 3 + [TIERS["older_phone"]] * 2 + [TIERS["smartwatch"]] * 2
STATES = [state(free_memory_bytes=p.training_memory_bytes // (1 + i % 3), bandwidth_bps=1e6 * (1 + i))
          for i, p in enumerate(FLEET)]
EXAMPLES = [40 + 30 * i for i in range(len(FLEET))]
LABELS = [[(i + c) % 4 * 5 for c in range(10)] for i in range(len(FLEET))]


def _decide(dataset: str, profiles: list) -> object:
    config = parse_config({"data": {"dataset": dataset}, "auto": {"enabled": True},
                           "orchestration": {"rounds": 4, "clients_per_round": 3}})
    _, decision = resolve(config, profiles, STATES, EXAMPLES, functools.partial(measure, SPEC), MemoryModel(), LABELS)
    return decision


def test_renaming_every_tier_and_the_data_set_leaves_the_decision_unchanged() -> None:
    renamed = [dataclasses.replace(p, tier=f"group{i % 2}") for i, p in enumerate(FLEET)]
    assert _decide("fashion_mnist", FLEET) == _decide("digits", renamed) is not None
