"""A deployed loopback run and a simulated run of the same fixed-plan config end with the same
model, bit for bit: device I trains shard I (it enrols as slot I) with the task RNG of (seed, I,
round), the plans are fixed (no dynamic batching, no deadline, every device every round) and the
server sums updates in device order whatever order they arrive in. So the tolerance is zero."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

from tests.transport.test_loopback import SECRET, SRC, finish, free_port, spawn

pytestmark = pytest.mark.slow
DEVICES = 3


def config(tmp_path: Path) -> Path:
    trace = tmp_path / "online.csv"  # the real processes are always online; so are their twins
    trace.write_text("t_s,link,bandwidth_bps,online\n0,wifi,20000000,true\n")
    raw = {"name": "twin", "seed": 3, "model": {"name": "logreg"}, "output": {"plots": False, "progress": False},
           "data": {"dataset": "digits", "partition": {"kind": "iid"}, "max_train_samples": 300,
                    "max_test_samples": 150},
           "fleet": {"tiers": {"flagship_phone": 2, "smartwatch": 1}, "catalogue": "scaled",
                     "traces": {i: str(trace) for i in range(DEVICES)}},
           "training": {"batch_size": 10, "lr": 0.1}, "batching": {"mode": "fixed"},
           "orchestration": {"rounds": 2, "clients_per_round": DEVICES},
           "deploy": {"poll_wait_s": 1.0, "linger_s": 3.0, "heartbeat_timeout_s": 60.0}}
    path = tmp_path / "twin.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def accuracies(run: Path) -> list[float]:
    return [json.loads(line)["accuracy"] for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_a_deployed_run_ends_with_the_simulated_runs_model(tmp_path: Path) -> None:
    cfg, state, port = config(tmp_path), tmp_path / "state", free_port()
    sim = subprocess.run([sys.executable, "-m", "fedfit.cli", "run", str(cfg), "--out", str(tmp_path / "sim")],
                         env={"PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "PATH": ""}, capture_output=True,
                         timeout=300)
    assert sim.returncode == 0, sim.stderr.decode()[-2000:]
    url = f"http://127.0.0.1:{port}"
    procs = [spawn(["server", str(cfg), "--state", str(state), "--port", str(port), "--secret", SECRET],
                   tmp_path / "server.log")]
    procs += [spawn(["device", "--server", url, "--secret", SECRET, "--shard", f"{i}/{DEVICES}"],
                    tmp_path / f"device{i}.log") for i in reversed(range(DEVICES))]  # shard I is still device I
    assert finish(procs, 300) == [0] * (DEVICES + 1), (tmp_path / "server.log").read_text()[-2000:]
    deployed = load_file(str(state / "run" / "model.safetensors"))
    simulated = load_file(str(tmp_path / "sim" / "model.safetensors"))
    assert deployed.keys() == simulated.keys()
    assert all(torch.equal(deployed[k], simulated[k]) for k in deployed)
    assert accuracies(state / "run") == accuracies(tmp_path / "sim")
