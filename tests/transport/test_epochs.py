"""The deployed device re-decides its batch before each local epoch from its monitor, and the
upload reports the batch of every epoch."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fedfit.config import parse_config
from fedfit.transport.client import DeviceClient
from fedfit.transport.codec import decode
from fedfit.transport.device import Device, DeviceOptions, local_data
from fedfit.transport.messages import ProfileReport, UpdateReport
from fedfit.transport.server import ServerRun
from fedfit.types import DeviceState, TrainPlan
from tests.helpers import state
from tests.transport.test_device import SECRET, tiny


class DroppingMonitor:
    """A monitor whose free memory follows a script, one value per snapshot (the last repeats)."""

    def __init__(self, free: list[int]) -> None:
        self._free: Iterator[int] = iter(free)
        self._last = free[0]

    def snapshot(self) -> DeviceState:
        self._last = next(self._free, self._last)
        return state(free_memory_bytes=self._last)

    def record_transfer(self, num_bytes: int, seconds: float) -> None:
        return None


@pytest.fixture
def device(tmp_path: Path) -> Device:
    raw = tiny(batching={"mode": "dynamic"}, training={"local_epochs": 3})
    run = ServerRun(parse_config(raw), tmp_path, SECRET)
    client = DeviceClient(None, SECRET)  # type: ignore[arg-type]  # never called: no server here
    dev = Device(client, DeviceOptions(shard=(0, 2)), log=lambda line: None)
    dev.read_config(json.loads(json.dumps(run.coord.config_body)))
    dev.setup(ProfileReport(total_memory_bytes=2**32, cpu_cores=4, arch="x86_64", flops_per_s=1e9, num_examples=100))
    return dev


def _two_budgets(dev: Device) -> tuple[int, int, int, int]:
    """Two free-memory budgets where the policy picks different micro-batches, and those batches."""
    assert dev.policy is not None
    roomy = dev.policy.decide(dev.profile, state(free_memory_bytes=2**31)).micro_batch
    for free in range(2**20, 2**17, -2**11):  # down to where one sample no longer fits
        d = dev.policy.decide(dev.profile, state(free_memory_bytes=free))
        if not d.declined and d.micro_batch < roomy:
            return 2**31, free, roomy, d.micro_batch
    raise AssertionError("no budget lowers the batch")


def test_the_device_lowers_its_batch_when_memory_drops_between_epochs(device: Device) -> None:
    high, low, big, small = _two_budgets(device)
    # snapshots: the task's decision (epoch 0), then epochs 1 and 2 after memory dropped
    device.monitor = DroppingMonitor([high, low, low])  # type: ignore[assignment]
    x, y = local_data(device.config, device.spec, device.options)
    plan, declined = device._decide(TrainPlan(device_id=0, round=0, micro_batch=big, local_epochs=3, lr=0.1))
    assert declined is None and plan.micro_batch == big
    body = device._train(plan, device.spec.build().state_dict(), x, y, 0.0)
    assert body is not None
    report = UpdateReport.model_validate_json(decode(body)[1]["report"])
    assert [b[0] for b in report.epoch_batches] == [big, small, small]
    assert report.micro_batch == small
    assert report.samples_processed == 3 * len(x)


def test_a_device_whose_memory_runs_out_mid_task_pauses_and_uploads_the_epochs_done(device: Device) -> None:
    high, _, big, _ = _two_budgets(device)
    device.monitor = DroppingMonitor([high, high, 0])  # type: ignore[assignment]
    x, y = local_data(device.config, device.spec, device.options)
    plan, _ = device._decide(TrainPlan(device_id=0, round=0, micro_batch=big, local_epochs=3, lr=0.1))
    body = device._train(plan, device.spec.build().state_dict(), x, y, 0.0)
    assert body is not None
    report = UpdateReport.model_validate_json(decode(body)[1]["report"])
    assert [b[0] for b in report.epoch_batches] == [big, big] and report.samples_processed == 2 * len(x)
