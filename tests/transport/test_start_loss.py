"""The received model's loss travels in the update report; reports without it still parse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedfit.config import parse_config
from fedfit.training.trainer import evaluate
from fedfit.transport.client import DeviceClient
from fedfit.transport.codec import decode
from fedfit.transport.device import Device, DeviceOptions, local_data
from fedfit.transport.messages import ProfileReport, UpdateReport
from fedfit.transport.server import ServerRun
from fedfit.types import TrainPlan
from tests.transport.test_device import SECRET, tiny

OLD = {"samples_processed": 10, "steps": 1, "micro_batch": 10, "accumulation_steps": 1, "train_loss": 0.1,
       "duration_s": 1.0, "num_examples": 10}


def test_a_report_without_start_loss_parses_as_unknown() -> None:
    assert UpdateReport.model_validate_json(json.dumps(OLD)).start_loss is None
    assert UpdateReport.model_validate_json(json.dumps(OLD | {"start_loss": 2.5})).start_loss == 2.5


@pytest.mark.parametrize("bad", [-1.0, "nan"])
def test_a_negative_or_non_finite_start_loss_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="start_loss"):
        UpdateReport.model_validate_json(json.dumps(OLD | {"start_loss": bad}))


def test_the_device_reports_the_received_models_loss(tmp_path: Path) -> None:
    run = ServerRun(parse_config(tiny()), tmp_path, SECRET)
    dev = Device(DeviceClient(None, SECRET), DeviceOptions(shard=(0, 2)), log=lambda line: None)  # type: ignore[arg-type]
    dev.read_config(json.loads(json.dumps(run.coord.config_body)))
    dev.setup(ProfileReport(total_memory_bytes=2**32, cpu_cores=4, arch="x86_64", flops_per_s=1e9, num_examples=100))
    x, y = local_data(dev.config, dev.spec, dev.options)
    model = dev.spec.build()
    start = {k: v.clone() for k, v in model.state_dict().items()}
    _, expected = evaluate(model, start, x, y)
    body = dev._train(TrainPlan(device_id=0, round=0, micro_batch=len(x), local_epochs=1, lr=0.1), start, x, y, 0.0)
    assert body is not None
    report = UpdateReport.model_validate_json(decode(body)[1]["report"])
    assert report.start_loss == pytest.approx(expected, rel=1e-5)  # one batch: the whole local set
