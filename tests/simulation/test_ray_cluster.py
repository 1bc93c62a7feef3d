"""The Ray executor on a cluster of several nodes, emulated on this machine (127.0.0.1 only).

Each node is a full Ray node (its own raylet, object store and worker processes) started by
``ray.cluster_utils.Cluster`` in a child process (``ray_cluster_job.py``, its own process
group: killed whole if it overruns, and swept afterwards so no Ray process outlives the test).
A node has one CPU and a worker needs one, so two workers must land on two nodes. What a real
many-machine cluster adds (a network between hosts, each host's own install) is not covered.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fedfit.config import parse_config
from fedfit.runner import run

NODES = 2
#: The child (cluster start, run, node removal) is killed, with every Ray process, after this long.
DEADLINE_S = 420
JOB = Path(__file__).with_name("ray_cluster_job.py")


def _small(executor: str) -> dict[str, Any]:
    return {
        "seed": 3, "data": {"dataset": "digits", "max_train_samples": 160, "max_test_samples": 40},
        "model": {"name": "logreg"},
        "fleet": {"tiers": {"flagship_phone": 3, "midrange_phone": 3}},
        "orchestration": {"rounds": 2, "clients_per_round": 4},
        "simulation": {"executor": executor, "workers": NODES},
        "output": {"plots": False, "progress": False, "checkpoint_every": 0}}


def _on_cluster(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run ``_small("ray")`` on an emulated ``NODES``-node cluster in a child process group."""
    config, run_dir = tmp_path / "ray.json", tmp_path / "ray"
    config.write_text(json.dumps(_small("ray")))
    child = subprocess.Popen([sys.executable, str(JOB), str(NODES), str(config), str(run_dir)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = child.communicate(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        pytest.fail(f"the {NODES}-node Ray run overran {DEADLINE_S} s; stderr ends: {err[-2000:]}")
    finally:
        _sweep(child.pid)
    return subprocess.CompletedProcess(child.args, child.returncode, out, err), run_dir


def _sweep(group: int) -> None:
    """Kill what is left of the child's process group (Ray agents orphaned by a node's removal)."""
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _trace(run_dir: Path) -> tuple[list[str], list[dict[str, object]], str]:
    """The run's events, its metrics rows without wall-clock time, and its model file's SHA-256."""
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    for row in metrics:
        row.pop("wall_time_s")
    model = hashlib.sha256((run_dir / "model.safetensors").read_bytes()).hexdigest()
    return (run_dir / "events.jsonl").read_text().splitlines(), metrics, model


@pytest.mark.slow
def test_a_run_on_a_multi_node_cluster_equals_the_local_run(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    run(parse_config(_small("local")), tmp_path / "local")
    done, run_dir = _on_cluster(tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    cluster = json.loads(done.stdout.strip().splitlines()[-1])
    assert cluster["address"].startswith("127.0.0.1:") and len(cluster["node_ids"]) == NODES
    events, metrics, model = _trace(run_dir)
    assert (events, metrics, model) == _trace(tmp_path / "local")
    assert len(metrics) == 2 and sum(json.loads(line)["ok"] for line in events) >= 4  # devices did train
    said = re.findall(r"^fedfit: Ray: (\d+) workers on (\d+) nodes: (.*)$", done.stderr, re.MULTILINE)
    assert [s[:2] for s in said] == [(str(NODES), str(NODES))]
    placed = dict(part.rsplit(" ", 1) for part in said[0][2].split(", "))
    assert sorted(placed.values()) == ["1"] * NODES  # one worker on each node: both nodes trained
    assert {node.split("/")[1] for node in placed} == {node_id[:8] for node_id in cluster["node_ids"]}
    assert all(node.startswith("127.0.0.1/") for node in placed)
