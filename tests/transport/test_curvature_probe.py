"""The curvature probe's request travels in the task's plan and β_σ in the update report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedfit.config import parse_config
from fedfit.transport.client import DeviceClient
from fedfit.transport.codec import decode
from fedfit.transport.device import Device, DeviceOptions, local_data
from fedfit.transport.messages import ProfileReport, UpdateReport, plan_from_record, plan_record
from fedfit.transport.server import ServerRun
from fedfit.types import TrainPlan
from tests.transport.test_device import SECRET, tiny
from tests.transport.test_start_loss import OLD


def test_the_plans_request_survives_the_task_record_and_old_records_ask_none() -> None:
    plan = TrainPlan(device_id=3, round=2, micro_batch=8, max_steps=5, sigma_probe=True, curvature_probe=True)
    assert plan_from_record(json.loads(json.dumps(plan_record(plan)))) == plan
    old = plan_record(TrainPlan(device_id=3, round=2, micro_batch=8))
    del old["curvature_probe"]
    assert plan_from_record(old).curvature_probe is False


def test_a_report_carries_the_curvature_and_refuses_a_non_finite_one() -> None:
    assert UpdateReport.model_validate_json(json.dumps(OLD)).noise_curvature is None
    assert UpdateReport.model_validate_json(json.dumps(OLD | {"noise_curvature": -0.25})).noise_curvature == -0.25
    with pytest.raises(ValueError, match="noise_curvature"):
        UpdateReport.model_validate_json(json.dumps(OLD | {"noise_curvature": "nan"}))


@pytest.mark.parametrize("asked", [True, False])
def test_the_device_reports_the_curvature_only_when_asked(tmp_path: Path, asked: bool) -> None:
    run = ServerRun(parse_config(tiny()), tmp_path, SECRET)
    dev = Device(DeviceClient(None, SECRET), DeviceOptions(shard=(0, 2)), log=lambda line: None)  # type: ignore[arg-type]
    dev.read_config(json.loads(json.dumps(run.coord.config_body)))
    dev.setup(ProfileReport(total_memory_bytes=2**32, cpu_cores=4, arch="x86_64", flops_per_s=1e9, num_examples=100))
    x, y = local_data(dev.config, dev.spec, dev.options)
    start = {k: v.clone() for k, v in dev.spec.build().state_dict().items()}
    plan = TrainPlan(device_id=0, round=0, micro_batch=8, max_steps=2, lr=0.1, sigma_probe=True, curvature_probe=asked)
    body = dev._train(plan, start, x, y, 0.0)
    assert body is not None
    report = UpdateReport.model_validate_json(decode(body)[1]["report"])
    assert (report.noise_curvature is not None) is asked and report.sigma2 is not None
