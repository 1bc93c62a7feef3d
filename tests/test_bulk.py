"""Frozen dataclass values built field by field equal the constructor's."""

import dataclasses
import random

import pytest

from fedfit.bulk import build_many
from fedfit.types import BatchRule, DeviceState, Link, Techniques, Thermal, TrainPlan


def _random_state(rng: random.Random) -> dict[str, object]:
    return {"free_memory_bytes": rng.randrange(2**33), "battery_fraction": rng.choice([None, rng.random()]),
            "charging": rng.choice([None, True, False]), "temperature_c": rng.choice([None, rng.uniform(10, 50)]),
            "thermal": rng.choice(list(Thermal)), "link": rng.choice(list(Link)), "bandwidth_bps": rng.random() * 1e8,
            "online": rng.random() < 0.5, "cpu_utilisation": rng.choice([None, rng.random()])}


def test_states_built_by_columns_equal_the_constructors_on_random_values() -> None:
    rng = random.Random(3)
    for n in (0, 1, 7, 300):
        rows = [_random_state(rng) for _ in range(n)]
        built = build_many(DeviceState, n, {f: [r[f] for r in rows] for f in rows[0]} if rows else {
            f.name: [] for f in dataclasses.fields(DeviceState)})
        expected = [DeviceState(**r) for r in rows]
        assert built == expected
        assert [hash(s) for s in built] == [hash(s) for s in expected]
        assert all(type(s) is DeviceState for s in built)


def test_constants_and_defaults_fill_the_fields_not_given() -> None:
    plans = build_many(TrainPlan, 3, {"device_id": iter([5, 1, 9])}, {"round": 2, "micro_batch": 8, "lr": 0.1})
    assert plans == [TrainPlan(device_id=d, round=2, micro_batch=8, lr=0.1) for d in (5, 1, 9)]
    assert plans[0].techniques is TrainPlan(0, 0, 1).techniques  # the default value itself, as __init__ gives
    mixed = build_many(TrainPlan, 2, {"device_id": [1, 2], "bound_by": [None, BatchRule.MEMORY]},
                       {"round": 0, "micro_batch": 4, "techniques": Techniques(checkpointing=True)})
    assert mixed[1] == TrainPlan(2, 0, 4, bound_by=BatchRule.MEMORY, techniques=Techniques(checkpointing=True))


def test_the_values_stay_frozen() -> None:
    plan = build_many(TrainPlan, 1, {"device_id": [0]}, {"round": 0, "micro_batch": 1})[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.lr = 1.0


def test_bad_requests_are_refused() -> None:
    with pytest.raises(TypeError, match="no default"):
        build_many(TrainPlan, 1, {"device_id": [0]}, {"round": 0})
    with pytest.raises(TypeError, match="no field"):
        build_many(TrainPlan, 1, {"device_id": [0], "colour": [1]}, {"round": 0, "micro_batch": 1})
    with pytest.raises(TypeError, match="both"):
        build_many(TrainPlan, 1, {"device_id": [0], "round": [0]}, {"round": 0, "micro_batch": 1})
    with pytest.raises(ValueError, match="holds 2 values for 3"):
        build_many(TrainPlan, 3, {"device_id": [0, 1]}, {"round": 0, "micro_batch": 1})

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:
            assert self.x >= 0

    with pytest.raises(TypeError, match="__post_init__"):
        build_many(Checked, 1, {"x": [-1]})
