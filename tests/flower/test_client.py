import pytest

pytest.importorskip("flwr", reason="Flower interop needs the extra: pip install fedfit[flower]")

import functools
import math

import torch
from flwr.app import ConfigRecord, MessageType, RecordDict

from fedfit.cost import MemoryModel, measure
from fedfit.cost.techniques import plan_peak_bytes
from fedfit.devices import tier
from fedfit.flower.client import DeviceSide, query_reply, train_reply
from fedfit.flower.fleet import BudgetMonitor, PartitionData, SimulatedOutOfMemory, SimulatedTiers, check_fits
from fedfit.flower.records import FAILURE_CODE, READINESS, content_update, error_cause, params_record, record_readiness
from fedfit.models import ModelSpec
from fedfit.policy.batching import BatchingRules
from fedfit.types import DeviceProfile, TrainPlan
from tests.flower.messages import context, message

SPEC = ModelSpec("cnn", (1, 8, 8), 10)
DATA = PartitionData("digits", 2, "iid", seed=0, max_train_samples=80)
TIERS = SimulatedTiers(("flagship_phone", "sensor_mcu"))


@functools.cache
def _sensor_budget() -> int:
    """The sensor node's free memory: the modelled peak of micro-batch 8 on its tier, so batch 32
    never fits and a smaller micro-batch does, whatever this host's kernels allocate (the model is
    measured with the allocator: the CNN's one-sample peak is under 384 KiB on one host, 504 KB on
    another)."""
    profile = tier("sensor_mcu")
    return plan_peak_bytes(MemoryModel().for_device(profile), measure(SPEC), TrainPlan(0, 0, 8))


def _monitor(profile: DeviceProfile) -> BudgetMonitor:
    """Steady devices: the flagship at its tier's budget, the sensor at :func:`_sensor_budget`."""
    return BudgetMonitor(_sensor_budget() if profile.tier == "sensor_mcu" else profile.training_memory_bytes)


def _side(**overrides: object) -> DeviceSide:
    kwargs: dict[str, object] = {"spec": SPEC, "data": DATA.train, "tiers": TIERS, "monitor": _monitor,
                                 "rules": BatchingRules(standard_batch=32, min_effective_batch=32)}
    return DeviceSide(**(kwargs | overrides))  # type: ignore[arg-type]


def _train_message(round_: int = 1) -> object:
    content = RecordDict({"arrays": params_record(SPEC.build().state_dict()),
                          "config": ConfigRecord({"server-round": round_})})
    return message(MessageType.TRAIN, content)


def _largest_fitting_batch(tier_name: str) -> int:
    """The largest micro-batch whose modelled peak fits the node's free memory (counted up by hand)."""
    profile, cost, memory = tier(tier_name), measure(SPEC), MemoryModel().for_device(tier(tier_name))
    free = _monitor(profile).free_memory_bytes
    b = 0
    while plan_peak_bytes(memory, cost, TrainPlan(0, 0, b + 1)) <= free:
        b += 1
    return b


def test_a_node_whose_budget_cannot_hold_batch_32_trains_a_fitting_micro_batch_accumulated_to_32() -> None:
    reply = train_reply(_side(), _train_message(), context(1))  # node 1: sensor_mcu

    update = content_update(reply.content)
    fits = _largest_fitting_batch("sensor_mcu")
    assert 1 <= update.micro_batch <= fits < 32
    assert update.accumulation_steps == math.ceil(32 / update.micro_batch)
    assert update.samples_processed == len(DATA.train(1)[1])  # one local epoch
    assert update.round == 1 and update.device_id == 1


def test_check_fits_fails_batch_32_out_of_memory_where_the_memory_model_says_it_does_not_fit() -> None:
    profile = tier("sensor_mcu")
    fits = _largest_fitting_batch("sensor_mcu")

    with pytest.raises(SimulatedOutOfMemory, match="micro-batch 32"):
        check_fits(TrainPlan(0, 0, 32), profile, measure(SPEC), MemoryModel(), _sensor_budget())
    check_fits(TrainPlan(0, 0, fits), profile, measure(SPEC), MemoryModel(), _sensor_budget())


def test_a_device_without_room_for_one_sample_declines_with_an_error_reply() -> None:
    side = _side(monitor=lambda profile: BudgetMonitor(1024))

    reply = train_reply(side, _train_message(), context(0))

    assert reply.has_error() and reply.error.code == FAILURE_CODE
    assert error_cause(reply.error) == "declined"


def test_a_memory_error_while_training_is_reported_as_out_of_memory() -> None:
    def exhausted(node: int) -> tuple[torch.Tensor, torch.Tensor]:
        raise MemoryError("cannot allocate the batch")

    reply = train_reply(_side(data=exhausted), _train_message(), context(0))

    assert error_cause(reply.error) == "out_of_memory"
    assert "cannot allocate" in (reply.error.reason or "")


def test_readiness_reports_the_batch_the_budget_affords_and_a_finite_duration() -> None:
    reply = query_reply(_side(), message(MessageType.QUERY, RecordDict()), context(1))

    ready = record_readiness(reply.content.config_records[READINESS])
    assert ready.affordable_batch == _largest_fitting_batch("sensor_mcu")
    assert ready.tier == "sensor_mcu" and ready.online and math.isfinite(ready.predicted_duration_s)
