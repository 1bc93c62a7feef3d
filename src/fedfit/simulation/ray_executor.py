"""Device training on Ray workers (``simulation.executor: ray``); everything else stays here.

The driver keeps the virtual clock, the orchestrator and the registry; Ray only trains. The
:class:`~fedfit.simulation.workload.WorkloadRecipe` goes into the object store once
(``ray.put``) and each worker — one actor per ``simulation.workers``, one CPU and one intra-op
thread each — builds its :class:`~fedfit.simulation.workload.Workload` (the data) from it once.

Tasks are not shipped one by one. ``submit`` only queues a task; the first time any result is
needed, every queued task (a synchronous round's whole cohort, in an asynchronous run whatever
was dispatched since) is dealt round-robin into one chunk per worker and each chunk goes as a
single actor call. Training is a pure function of the task, so results are the same as
``local``'s, bit for bit: same events, metrics and model bytes.

``simulation.ray_address``: ``None`` joins the Ray instance this process already runs, or starts
a local one (``workers`` CPUs, no dashboard, listening on loopback only); ``"auto"`` or
``"HOST:PORT"`` joins a cluster started with ``ray start`` (every machine needs fedfit and the
data installed). Once its workers have started, the executor says on stderr how many run on
each node (``placement``). Ray is imported only here, only when chosen (the optional ``ray`` extra).
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from types import ModuleType
from typing import Any

import torch

from fedfit.errors import ConfigError
from fedfit.simulation.threads import Auto, pool_workers
from fedfit.simulation.workload import TrainTask, Workload, WorkloadRecipe
from fedfit.types import Update

MISSING_RAY = "simulation.executor: ray needs the 'ray' extra: pip install fedfit[ray]"
#: Set around a local start so Ray takes 127.0.0.1 as this node's address (and so binds only it).
_LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
#: How long the workers may take to start (import torch, build the data) before the run stops.
WORKER_START_TIMEOUT_S = 600.0


def import_ray() -> ModuleType:
    """The ``ray`` module, or a one-line :class:`ConfigError` naming the extra that provides it."""
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise ConfigError(MISSING_RAY) from None


def start_local_cluster(num_cpus: int) -> ModuleType:
    """Start a new local Ray instance with ``num_cpus`` CPUs that listens on 127.0.0.1 only: never
    a cluster named by ``RAY_ADDRESS`` or last started with ``ray start`` (``ray_address`` joins those).

    Ray replaces a loopback ``_node_ip_address`` by the machine's address unless clusters are
    switched off, so they are, for the start-up only (the processes it starts inherit that).
    """
    ray = import_ray()
    with loopback_only(), quiet_tips():
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1",
                 log_to_driver=False, configure_logging=False)
    return ray


@contextmanager
def quiet_tips() -> Iterator[None]:
    """Ray's start-up ``FutureWarning`` about a later default (accelerator variables), which fedfit
    does not rely on, kept off a run's stderr."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Tip: In future versions of Ray", category=FutureWarning)
        yield


@contextmanager
def loopback_only() -> Iterator[None]:
    """Ray clustering off while Ray starts, so a loopback node address stays 127.0.0.1."""
    constants = importlib.import_module("ray._private.ray_constants")
    before_env, before_flag = os.environ.get(_LOOPBACK_ENV), getattr(constants, "ENABLE_RAY_CLUSTER")
    os.environ[_LOOPBACK_ENV] = "0"
    setattr(constants, "ENABLE_RAY_CLUSTER", False)
    try:
        yield
    finally:
        setattr(constants, "ENABLE_RAY_CLUSTER", before_flag)
        if before_env is None:
            os.environ.pop(_LOOPBACK_ENV, None)
        else:
            os.environ[_LOOPBACK_ENV] = before_env


def describe_placement(placement: dict[str, int]) -> str:
    """``placement`` (workers per node) as one line, e.g. ``3 workers on 2 nodes: 10.0.0.5/1a2b3c4d 2, ...``."""
    workers, nodes = sum(placement.values()), len(placement)
    where = ", ".join(f"{node} {count}" for node, count in placement.items())
    return f"{workers} worker{'s' * (workers != 1)} on {nodes} node{'s' * (nodes != 1)}: {where}"


def check_answers(address: str, timeout_s: float = 5.0) -> None:
    """A one-line :class:`ConfigError` unless something accepts a TCP connection at ``address``
    (``HOST:PORT``, a cluster's head); Ray itself retries an unreachable one for minutes. Other
    forms (``auto``, ``ray://...``) are left to Ray."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "/" in host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as error:
        raise ConfigError(f"simulation.ray_address: nothing answers at {address!r} ({error.strerror or error}); "
                          "start the cluster (ray start --head) or check `ray status`") from None


def _on_loopback(address: str) -> bool:
    """Whether ``address`` (``HOST:PORT``) is this machine's loopback: a cluster bound to 127.0.0.1,
    which Ray would otherwise look for at the machine's network address (and never find)."""
    return address.rpartition(":")[0] in {"127.0.0.1", "localhost"}


class RayTrainer:
    """One Ray worker: the workload built once, then chunks of tasks trained on one thread."""

    def __init__(self, recipe: WorkloadRecipe) -> None:
        torch.set_num_threads(1)  # one intra-op thread per concurrently training device
        self._workload: Workload = recipe.build()

    def run_chunk(self, tasks: list[TrainTask]) -> list[Update]:
        """Train ``tasks`` in order and return their updates."""
        return [self._workload.run(task) for task in tasks]

    def node(self) -> str:
        """The Ray node this worker runs on: its IP address and the start of its node id."""
        ray = import_ray()
        return f"{ray.util.get_node_ip_address()}/{ray.get_runtime_context().get_node_id()[:8]}"


class _Chunk:
    """A chunk's pending updates, fetched from Ray once however many handles ask."""

    def __init__(self, ray: ModuleType, ref: Any) -> None:
        self._ray, self._ref = ray, ref
        self._updates: list[Update] | None = None

    def update(self, index: int) -> Update:
        if self._updates is None:
            try:
                self._updates = list(self._ray.get(self._ref))
            except self._ray.exceptions.RayActorError as error:
                raise RuntimeError(f"simulation.executor: ray: a training worker died ({error!s:.200})") from None
        return self._updates[index]


class _RayHandle:
    def __init__(self, executor: RayExecutor, task: TrainTask) -> None:
        self._executor, self.task = executor, task
        self.slot: tuple[_Chunk, int] | None = None

    def result(self) -> Update:
        self._executor.flush()
        assert self.slot is not None, "a flushed handle has its chunk"
        chunk, index = self.slot
        return chunk.update(index)

    def cancel(self) -> bool:
        """Withdraw a task not yet shipped; one already on a worker finishes unread."""
        return self._executor.withdraw(self)


class RayExecutor:
    """Trains on Ray actors, each holding the workload once; tasks go in one chunk per actor.

    Args:
        recipe: what every worker builds its workload from (put in the object store once).
        workers: actors (one CPU each); ``"auto"``: one per CPU of the cluster.
        address: a cluster to join (``"auto"`` or ``"HOST:PORT"``); ``None``: the instance this
            process runs, else a new local one.

    Attributes:
        placement: how many workers run on each node (``IP/node-id prefix`` -> workers), known
            once they have started (the constructor waits, at most ``WORKER_START_TIMEOUT_S``).

    Raises:
        ConfigError: Ray is not installed, the cluster cannot be reached, it has fewer CPUs than
            ``workers``, or the workers did not start in time.
    """

    def __init__(self, recipe: WorkloadRecipe, workers: int | Auto, address: str | None = None) -> None:
        self._ray = ray = self._connect(workers, address)
        cpus = int(ray.cluster_resources().get("CPU", 0))
        count = pool_workers(workers, cores=cpus)
        if count > cpus:
            self.close()
            raise ConfigError(f"simulation.workers: {count} Ray workers need {count} CPUs, the cluster has {cpus}")
        recipe_ref = ray.put(recipe)
        actor = ray.remote(num_cpus=1)(RayTrainer)
        self._actors = [actor.remote(recipe_ref) for _ in range(count)]
        self._queued: list[_RayHandle] = []
        self.placement = self._place()
        print(f"fedfit: Ray: {describe_placement(self.placement)}", file=sys.stderr)

    def _place(self) -> dict[str, int]:
        """Wait (bounded) for every worker to start; the number of workers on each node."""
        count = len(self._actors)
        try:
            nodes = self._ray.get([actor.node.remote() for actor in self._actors], timeout=WORKER_START_TIMEOUT_S)
        except self._ray.exceptions.GetTimeoutError:
            self.close()
            raise ConfigError(f"simulation.workers: {count} Ray workers did not start within "
                              f"{WORKER_START_TIMEOUT_S:.0f} s (see `ray status`)") from None
        except self._ray.exceptions.RayActorError as error:
            self.close()
            raise RuntimeError(f"simulation.executor: ray: a training worker died ({error!s:.200})") from None
        return dict(sorted(Counter(nodes).items()))

    def _connect(self, workers: int | Auto, address: str | None) -> ModuleType:
        ray = import_ray()
        self._owns_ray = not ray.is_initialized()
        if not self._owns_ray:
            return ray
        if address is None:
            return start_local_cluster(pool_workers(workers))
        check_answers(address)
        try:
            with loopback_only() if _on_loopback(address) else nullcontext(), quiet_tips():
                ray.init(address=address, log_to_driver=False, configure_logging=False)
        except (ConnectionError, ValueError, RuntimeError) as error:
            raise ConfigError(f"simulation.ray_address: cannot join Ray at {address!r} ({error!s:.200})") from None
        return ray

    def submit(self, task: TrainTask) -> _RayHandle:
        handle = _RayHandle(self, task)
        self._queued.append(handle)
        return handle

    def withdraw(self, handle: _RayHandle) -> bool:
        """Drop ``handle`` from the queue; ``False`` when it was already shipped."""
        if handle.slot is not None:
            return False
        if handle in self._queued:  # a second cancel finds it gone
            self._queued.remove(handle)
        return True

    def flush(self) -> None:
        """Ship every queued task: dealt round-robin, one chunk (one actor call) per actor."""
        queued, self._queued = self._queued, []
        for a, actor in enumerate(self._actors):
            mine = queued[a::len(self._actors)]
            if not mine:
                continue
            chunk = _Chunk(self._ray, actor.run_chunk.remote([h.task for h in mine]))
            for index, handle in enumerate(mine):
                handle.slot = (chunk, index)

    def close(self) -> None:
        """Stop the actors, and the local Ray instance if this executor started it."""
        for actor in getattr(self, "_actors", []):
            self._ray.kill(actor)
        self._actors = []
        if self._owns_ray:
            self._ray.shutdown()
