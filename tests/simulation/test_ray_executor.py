"""The Ray executor: same results as training in-process, tasks shipped in chunks, loopback only.

One local Ray instance (2 CPUs) serves the whole module: starting Ray costs seconds.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import psutil
import pytest

from fedfit.data import build_federated_data
from fedfit.config import ExperimentConfig, parse_config
from fedfit.errors import ConfigError
from fedfit.models import ModelSpec
from fedfit.runner import RunResult, run
from fedfit.simulation import ray_executor
from fedfit.simulation.ray_executor import MISSING_RAY, RayExecutor, describe_placement, start_local_cluster
from fedfit.simulation.workload import TrainTask, WorkloadRecipe
from fedfit.types import Params, TrainPlan

# Ray's start-up leaves /dev/null handles open and tips about a future default: not ours.
pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning",
                                        "ignore::FutureWarning:ray.*")

DIGITS = (("dataset", "digits"), ("num_devices", 6), ("partition", "iid"), ("max_train_samples", 120),
          ("max_test_samples", 20), ("seed", 0))


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[ModuleType]:
    """The local instance, started while ``RAY_ADDRESS`` names a cluster that is not there: a local
    start must not join it (Ray's own default would, and refuse ``num_cpus``)."""
    pytest.importorskip("ray")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_ADDRESS", "127.0.0.1:9")
        ray = start_local_cluster(num_cpus=2)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def executor(ray_cluster: ModuleType) -> Iterator[RayExecutor]:
    """Two workers holding the digits workload, shared by the tests (each worker costs a process)."""
    shared = RayExecutor(_recipe(), workers=2)
    try:
        yield shared
    finally:
        shared.close()


def _recipe() -> WorkloadRecipe:
    data = build_federated_data(**dict(DIGITS))
    return WorkloadRecipe(model=ModelSpec("logreg", data.input_shape, data.num_classes), data_kwargs=DIGITS, seed=5)


def _tasks(count: int) -> list[TrainTask]:
    params = _recipe().build().module(1.0).state_dict()
    return [TrainTask(TrainPlan(device_id=d, round=1, micro_batch=8), dict(params)) for d in range(count)]


def _digest(params: Params) -> str:
    return hashlib.sha256(b"".join(params[k].numpy().tobytes() for k in sorted(params))).hexdigest()


def test_updates_equal_in_process_training_bit_for_bit(executor: RayExecutor) -> None:
    workload, tasks = _recipe().build(), _tasks(5)
    handles = [executor.submit(task) for task in tasks]
    remote = [h.result() for h in reversed(handles)][::-1]
    for task, update in zip(tasks, remote, strict=True):
        assert _digest(update.params) == _digest(workload.run(task).params)
        assert update.device_id == task.plan.device_id and update.num_examples == workload.run(task).num_examples


def test_queued_tasks_go_in_one_chunk_per_worker(executor: RayExecutor) -> None:
    handles = [executor.submit(task) for task in _tasks(5)]
    assert all(h.slot is None for h in handles)  # nothing shipped before a result is wanted
    handles[0].result()
    chunks = [h.slot for h in handles]
    assert all(slot is not None for slot in chunks)
    by_chunk: dict[int, list[int]] = {}
    for device, slot in enumerate(chunks):
        assert slot is not None
        by_chunk.setdefault(id(slot[0]), []).append(device)
    assert sorted(by_chunk.values()) == [[0, 2, 4], [1, 3]]  # dealt round-robin over 2 workers


def test_a_task_not_yet_shipped_is_withdrawn_on_cancel(executor: RayExecutor) -> None:
    first, second = (executor.submit(task) for task in _tasks(2))
    assert second.cancel() and second.cancel()  # cancelling twice is harmless
    assert first.result().device_id == 0
    assert second.slot is None and not first.cancel()


def test_placement_counts_the_workers_on_each_node(executor: RayExecutor) -> None:
    ((node, workers),) = executor.placement.items()  # a local instance is one node
    assert workers == 2 and re.fullmatch(r"127\.0\.0\.1/[0-9a-f]{8}", node)


def test_placement_reads_as_one_line() -> None:
    assert describe_placement({"10.0.0.5/1a2b3c4d": 2, "10.0.0.6/5e6f7a8b": 1}) == \
        "3 workers on 2 nodes: 10.0.0.5/1a2b3c4d 2, 10.0.0.6/5e6f7a8b 1"
    assert describe_placement({"127.0.0.1/00ff00ff": 1}) == "1 worker on 1 node: 127.0.0.1/00ff00ff 1"


def test_a_loopback_address_is_joined_on_loopback() -> None:
    assert ray_executor._on_loopback("127.0.0.1:6379") and ray_executor._on_loopback("localhost:40001")
    assert not ray_executor._on_loopback("10.0.0.5:6379") and not ray_executor._on_loopback("auto")


def test_workers_that_cannot_start_in_time_are_a_config_error(executor: RayExecutor,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ray_executor, "WORKER_START_TIMEOUT_S", 1.0)  # ``executor`` holds both CPUs
    with pytest.raises(ConfigError, match=r"^simulation.workers: 2 Ray workers did not start within 1 s"):
        RayExecutor(_recipe(), workers=2)


def test_more_workers_than_cluster_cpus_is_a_config_error(ray_cluster: ModuleType) -> None:
    with pytest.raises(ConfigError, match=r"simulation.workers: 3 Ray workers need 3 CPUs, the cluster has 2"):
        RayExecutor(_recipe(), workers=3)
    assert ray_cluster.is_initialized()  # a cluster it joined is left running


def test_the_local_cluster_listens_on_loopback_only(ray_cluster: ModuleType) -> None:
    listening = {(c.laddr.ip, c.laddr.port) for p in psutil.Process().children(recursive=True)
                 for c in _connections(p) if c.status == psutil.CONN_LISTEN}
    assert listening, "the Ray processes listen somewhere"
    assert {_ipv4(ip) for ip, _ in listening} == {"127.0.0.1"}


def _ipv4(ip: str) -> str:
    """``ip`` as IPv4 (``::ffff:127.0.0.1``, an IPv4-mapped socket, is ``127.0.0.1``)."""
    address = ipaddress.ip_address(ip)
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return str(mapped or address)


def _connections(process: psutil.Process) -> list[psutil._common.pconn]:
    try:
        return process.net_connections(kind="inet")
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


def test_without_ray_installed_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(ConfigError) as caught:
        RayExecutor(_recipe(), workers=2)
    assert str(caught.value) == MISSING_RAY == "simulation.executor: ray needs the 'ray' extra: pip install fedfit[ray]"


def test_config_takes_ray_and_an_address() -> None:
    assert parse_config({}).simulation.ray_address is None
    config = parse_config({"simulation": {"executor": "ray", "ray_address": "auto"}})
    assert config.simulation.executor == "ray" and config.simulation.ray_address == "auto"
    with pytest.raises(ConfigError, match="simulation"):
        parse_config({"simulation": {"executor": "spark"}})


def _small(executor: str) -> ExperimentConfig:
    return parse_config({
        "seed": 2, "data": {"dataset": "digits", "max_train_samples": 240, "max_test_samples": 60},
        "model": {"name": "mlp"},
        "fleet": {"tiers": {"flagship_phone": 3, "midrange_phone": 3, "older_phone": 2}},
        "orchestration": {"rounds": 2, "clients_per_round": 4},
        "simulation": {"executor": executor, "workers": 2},
        "output": {"plots": False, "progress": False, "checkpoint_every": 0}})


def _trace(run_dir: Path, result: RunResult) -> tuple[list[str], list[dict[str, object]], str]:
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    for row in metrics:
        row.pop("wall_time_s")
    return (run_dir / "events.jsonl").read_text().splitlines(), metrics, _digest(result.params)


@pytest.mark.slow
def test_a_run_on_ray_equals_the_local_run(executor: RayExecutor, tmp_path: Path) -> None:
    executor.close()  # its workers hold both CPUs; the run starts its own two (this test comes last)
    local = run(_small("local"), tmp_path / "local")
    remote = run(_small("ray"), tmp_path / "ray")
    events, metrics, model = _trace(tmp_path / "ray", remote)
    assert (events, metrics, model) == _trace(tmp_path / "local", local)
    assert len(metrics) == 2 and sum(json.loads(line)["ok"] for line in events) >= 4  # devices did train remotely
