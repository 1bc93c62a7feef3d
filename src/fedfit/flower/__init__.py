"""Flower interoperability: fedfit's device side in a Flower ``ClientApp``, fedfit's selection
and aggregation in a Flower strategy, and a local Flower simulation on one host.

Needs the optional extra (``pip install fedfit[flower]``); ``flwr`` is imported only when one of
these names is first used, so ``import fedfit`` never needs it.

* :func:`fedfit_client_app`, :class:`DeviceSide` (:mod:`fedfit.flower.client`);
* :class:`FedfitStrategy`, :class:`RoundLog` (:mod:`fedfit.flower.strategy`);
* :class:`SimulatedTiers`, :class:`PartitionData`, :class:`BudgetMonitor`,
  :class:`SimulatedOutOfMemory`, :func:`check_fits` (:mod:`fedfit.flower.fleet`);
* :func:`run_local_simulation`, :func:`local_backend` (:mod:`fedfit.flower.simulation`).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from fedfit.errors import ConfigError

_HOMES = {
    "DeviceSide": "client", "fedfit_client_app": "client",
    "FedfitStrategy": "strategy", "RoundLog": "strategy",
    "SimulatedTiers": "fleet", "PartitionData": "fleet", "BudgetMonitor": "fleet",
    "SimulatedOutOfMemory": "fleet", "check_fits": "fleet", "psutil_budget": "fleet", "steady_budget": "fleet",
    "run_local_simulation": "simulation", "local_backend": "simulation",
}

__all__ = sorted(_HOMES)


def require_flwr() -> None:
    """Import Flower, or raise a one-line :class:`ConfigError` naming the extra to install."""
    os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")  # fedfit's runs stay on this host unless asked
    try:
        importlib.import_module("flwr")
    except ImportError:
        raise ConfigError("Flower interop needs Flower: pip install fedfit[flower]") from None


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'fedfit.flower' has no attribute {name!r}")
    require_flwr()
    return getattr(importlib.import_module(f"fedfit.flower.{_HOMES[name]}"), name)
