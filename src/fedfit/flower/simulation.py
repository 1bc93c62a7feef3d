"""Flower's simulation engine on this host only: Ray on 127.0.0.1, few CPUs, stopped after.

Flower's simulation runs each ``ClientApp`` call in a Ray actor. :func:`run_local_simulation`
starts that Ray instance itself (unless one is already running): ``num_cpus`` CPUs, no
dashboard, its processes bound to the loopback address (Ray swaps a loopback node address for
the machine's unless clustering is switched off, so it is, for the start only), a small object
store; then runs ``flwr.simulation.run_simulation`` and shuts Ray down, so no Ray process
outlives the call.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from types import ModuleType
from typing import Any

from flwr.clientapp import ClientApp
from flwr.serverapp import ServerApp
from flwr.simulation import run_simulation

from fedfit.errors import ConfigError
from fedfit.simulation.ray_executor import loopback_only

#: Ray's object store for a simulation's few small models (Ray's floor is 75 MiB).
OBJECT_STORE_BYTES = 128 * 2**20
#: Tries to start Ray before giving up (its start can time out on a loaded host).
START_ATTEMPTS = 3


def local_backend(cpus_per_client: float = 1.0) -> dict[str, Any]:
    """Flower's backend config: each ClientApp actor takes ``cpus_per_client`` CPUs, no GPU."""
    return {"client_resources": {"num_cpus": cpus_per_client, "num_gpus": 0.0}}


def run_local_simulation(server_app: ServerApp, client_app: ClientApp, *, num_nodes: int, num_cpus: int = 1,
                         cpus_per_client: float = 1.0, verbose: bool = False) -> None:
    """Run a Flower simulation of ``num_nodes`` nodes on this host and stop Ray afterwards.

    Args:
        server_app: the Flower ``ServerApp`` (e.g. one running :class:`FedfitStrategy`).
        client_app: the ``ClientApp`` (e.g. :func:`fedfit_client_app`).
        num_nodes: simulated nodes (Flower's SuperNodes); node ``i`` has partition id ``i``.
        num_cpus: CPUs Ray may use; with ``cpus_per_client`` it sets how many clients run at once.
        cpus_per_client: CPUs each ClientApp actor reserves.
        verbose: Flower's debug logging.

    Raises:
        ConfigError: fewer than one node or CPU.
    """
    if num_nodes < 1 or num_cpus < 1 or not 0 < cpus_per_client <= num_cpus:
        raise ConfigError(f"flower simulation: need num_nodes >= 1, num_cpus >= 1 and 0 < cpus_per_client <= "
                          f"num_cpus, got {num_nodes}, {num_cpus}, {cpus_per_client}")
    try:
        ray = importlib.import_module("ray")
    except ImportError:
        raise ConfigError("Flower's simulation needs Ray: pip install fedfit[flower]") from None
    started = not ray.is_initialized()
    if started:
        _start_loopback(ray, num_cpus)
    try:
        run_simulation(server_app=server_app, client_app=client_app, num_supernodes=num_nodes,
                       backend_config=local_backend(cpus_per_client), verbose_logging=verbose)
    finally:
        if started and ray.is_initialized():
            ray.shutdown()


def _start_loopback(ray: ModuleType, num_cpus: int, attempts: int = START_ATTEMPTS) -> None:
    """Start Ray on 127.0.0.1 with ``num_cpus`` CPUs; its workers see this process's import path.

    Ray gives its processes a fixed 30 s to register; on a loaded host that can pass, so a
    start that times out is cleaned up and tried again, ``attempts`` times in all.
    """
    pythonpath = os.pathsep.join(p for p in sys.path if p)
    for attempt in range(1, attempts + 1):
        try:
            with loopback_only(), warnings.catch_warnings():
                warnings.filterwarnings("ignore", category=FutureWarning, module="ray.*")
                ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1",
                         log_to_driver=False, configure_logging=False, object_store_memory=OBJECT_STORE_BYTES,
                         runtime_env={"env_vars": {"PYTHONPATH": pythonpath}})
            return
        except Exception as err:  # noqa: BLE001 - Ray raises a bare Exception when its start times out
            ray.shutdown()
            if attempt == attempts or "timed out" not in str(err):
                raise
