"""Deployed SecAgg on 127.0.0.1: a real server and four device processes, one of which exits
right after masking (before its masked input is sent). The model the server ends with must be
the weighted average of the three survivors' updates, recomputed here by training each
survivor's plan on its shard (an independent reference), within fixed-point rounding."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

import fedfit
from fedfit.config import parse_config
from fedfit.data import build_federated_data
from fedfit.inputs import data_kwargs
from fedfit.sources import model_spec
from fedfit.training import OptimizerConfig, train
from fedfit.transport.messages import plan_from_record
from fedfit.transport.sqlite_state import SqliteState
from tests.transport.test_loopback import SECRET, finish, free_port, server

pytestmark = pytest.mark.slow
SRC = str(Path(fedfit.__file__).resolve().parents[1])
DEVICES = 4


def raw_config() -> dict[str, object]:
    return {"name": "secagg-loopback", "seed": 3, "model": {"name": "logreg"}, "output": {"plots": False},
            "data": {"dataset": "digits", "partition": {"kind": "iid"}, "max_train_samples": 200,
                     "max_test_samples": 100},
            "fleet": {"tiers": {"flagship_phone": DEVICES}}, "training": {"batch_size": 10, "lr": 0.1},
            "orchestration": {"rounds": 1, "clients_per_round": DEVICES},
            "privacy": {"secure_aggregation": {"enabled": True, "threshold": 0.5, "min_cohort": 3,
                                               "phase_timeout_s": 20.0}},
            "deploy": {"poll_wait_s": 1.0, "linger_s": 8.0, "heartbeat_timeout_s": 30.0}}


def device(port: int, shard: int, log: Path, drop: bool) -> subprocess.Popen[bytes]:
    env = os.environ | {"PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    if drop:
        env["FEDFIT_SECAGG_EXIT_BEFORE_MASKED"] = "1"
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "fedfit.cli", "device", "--server", f"http://127.0.0.1:{port}",
                                 "--secret", SECRET, "--shard", f"{shard}/{DEVICES}"], stdout=out,
                                stderr=subprocess.STDOUT, env=env)


def test_a_device_dropped_after_masking_leaves_the_exact_sum_of_the_others(tmp_path: Path) -> None:
    port, state = free_port(), tmp_path / "state"
    cfg = tmp_path / "secagg.yaml"
    cfg.write_text(yaml.safe_dump(raw_config()))
    procs = [server(cfg, state, port)] + [device(port, i, tmp_path / f"device{i}.log", drop=i == DEVICES - 1)
                                          for i in range(DEVICES)]
    codes = finish(procs, 300)
    assert codes == [0, 0, 0, 0, 3], (tmp_path / "server.log").read_text()[-2000:]
    shard_of = {int(re.search(r"device (\d+): enrolled", (tmp_path / f"device{i}.log").read_text()).group(1)): i
                for i in range(DEVICES)}  # type: ignore[union-attr]
    for i in range(DEVICES - 1):
        assert re.search(r"secagg task \w+: cohort of 4", (tmp_path / f"device{i}.log").read_text())

    store = SqliteState(state / "state.db")
    tasks = store.tasks()
    assert not store.journal()  # the server never held an individual update
    accepted = [t for t in tasks if t.status == "accepted"]
    failed = [t for t in tasks if t.status == "failed"]
    assert len(accepted) == DEVICES - 1 and len(failed) == 1 and shard_of[failed[0].device_id] == DEVICES - 1
    config = parse_config(raw_config())
    data = build_federated_data(**data_kwargs(config))
    spec = model_spec(config, data, None)
    start = load_file(str(state / "models" / "v0.safetensors"))
    num = {k: torch.zeros_like(v, dtype=torch.float64) for k, v in start.items()}
    den = 0.0
    t = config.training
    for task in accepted:
        plan = plan_from_record(json.loads(task.plan_json))
        local = data.train[shard_of[task.device_id]]
        update = train(spec.build(plan.width), start, local.x, local.y, plan, seed=config.seed,
                       optimizer=OptimizerConfig(t.momentum, t.weight_decay, kind=t.optimizer))
        for k in num:
            num[k] += update.samples_processed * update.params[k].to(torch.float64)
        den += update.samples_processed
    final = load_file(str(state / "models" / "v1.safetensors"))
    for k in num:
        expected = num[k] / den
        assert not torch.allclose(expected, start[k].to(torch.float64))  # the round moved the model
        torch.testing.assert_close(final[k].to(torch.float64), expected, atol=1e-6, rtol=0)
