"""The checkpoint codec restores fedfit's messages exactly and accepts nothing else."""

from __future__ import annotations

import json
import math

import pytest
import torch

from fedfit.errors import CheckpointError
from fedfit.simulation.codec import Codec
from fedfit.types import BatchRule, Failure, FailureCause, TaskCost, TaskResult, Techniques, TrainPlan, Update
from tests.helpers import state

CODEC = Codec([TaskResult, TrainPlan, Techniques, BatchRule, Update, Failure, FailureCause, TaskCost])


def _result(outcome: Update | Failure) -> TaskResult:
    plan = TrainPlan(3, 7, 16, accumulation_steps=2, epoch_batches=((16, 2), (8, 4)), bound_by=BatchRule.MEMORY,
                     techniques=Techniques(checkpointing=True, train_stages=(0, 2)))
    cost = TaskCost(0.5, math.inf, 0.25, 1.5, 2**20, 100, 200, 3e6)
    return TaskResult(plan, "older_phone", 10.0, 12.5, outcome, cost, free_memory_bytes=2**24)


def _round_trip(value: object) -> object:
    tensors: dict[str, torch.Tensor] = {}
    data = json.loads(json.dumps(CODEC.encode(value, tensors)))  # through real JSON text
    return CODEC.decode(data, tensors)


def test_a_task_result_with_tensors_enums_and_tuples_comes_back_equal() -> None:
    params = {"w": torch.randn(3, 4), "b": torch.arange(4, dtype=torch.int64)}
    masks = {"w": torch.rand(3, 4) > 0.5}
    update = Update(3, 7, params, 40, 80, 5, 16, 2, 0.75, epoch_batches=((16, 2),), masks=masks)
    back = _round_trip(_result(update))

    assert isinstance(back, TaskResult) and isinstance(back.outcome, Update)
    assert back.plan == _result(update).plan  # nested dataclass, enum and tuple of tuples
    assert back.cost == _result(update).cost and math.isinf(back.cost.compute_s)
    assert back.outcome.epoch_batches == ((16, 2),)
    assert all(back.outcome.params[k].equal(params[k]) and back.outcome.params[k].dtype == params[k].dtype
               for k in params)
    assert back.outcome.masks is not None and back.outcome.masks["w"].equal(masks["w"])


def test_dicts_keep_non_string_keys_and_failures_their_cause() -> None:
    value = {3: (1.5, 2), (4, 0): [Failure(4, 0, FailureCause.OUT_OF_MEMORY, "peak > free")], "x": None}
    assert _round_trip(value) == value


def test_equal_tensors_are_stored_once() -> None:
    tensors: dict[str, torch.Tensor] = {}
    w = torch.ones(5)
    CODEC.encode([{"a": w}, {"a": w.clone()}, {"a": torch.zeros(5)}, torch.ones(5, dtype=torch.float64)], tensors)
    assert len(tensors) == 3  # same values and dtype share a key; other values or dtype do not


def test_decoding_refuses_unknown_types_and_missing_tensors() -> None:
    with pytest.raises(CheckpointError, match="'Popen'"):
        CODEC.decode({"$d": ["Popen", {"args": "rm -rf /"}]}, {})
    with pytest.raises(CheckpointError, match="missing"):
        CODEC.decode({"$x": "abc"}, {})
    with pytest.raises(CheckpointError, match="malformed"):
        CODEC.decode({"$d": ["Failure", {"device_id": 1}]}, {})  # a required field missing


def test_encoding_refuses_unregistered_types() -> None:
    with pytest.raises(TypeError, match="DeviceState"):
        CODEC.encode(state(), {})


def test_conforms_checks_annotations_item_by_item() -> None:
    from fedfit.simulation.codec import conforms

    assert conforms((1, 2.5), tuple[float, ...]) and not conforms((1, "2"), tuple[float, ...])
    assert conforms(3, int) and not conforms(True, int) and not conforms(2.5, int)
    assert conforms(None, float | None) and not conforms("x", float | None)
    assert conforms({1: [0.5]}, dict[int, list[float]]) and not conforms({"1": [0.5]}, dict[int, list[float]])
    assert not conforms([1, 2], tuple[int, int]) and conforms((1, 2), tuple[int, int])
