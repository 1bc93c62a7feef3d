"""Weighting schemes for the masked weighted average: small pure functions of an update.

* ``samples``   — samples processed in local training (FedAvg's n_k when one epoch);
* ``examples``  — local data-set size, as McMahan et al. weight;
* ``uniform``   — every update counts the same;
* ``batch``     — the effective batch the device actually used (micro-batch × accumulation,
  its last epoch's), seed 000's "server-side normalisation: weight updates by the actual batch
  size used". ``samples`` already weights by the work actually done (batch × steps);
* ``steps``     — optimiser steps taken (more local work counts more; FedNova's ‖a_i‖₁ for plain
  SGD — FedNova itself normalises by it, see :mod:`fedfit.aggregation.fednova`).

Staleness discounts (:mod:`fedfit.aggregation.staleness`) multiply these in
:func:`fedfit.aggregation.rule.aggregate`.
"""

from __future__ import annotations

from collections.abc import Callable

from fedfit.errors import ConfigError
from fedfit.types import Update

Weighting = Callable[[Update], float]

WEIGHTINGS: dict[str, Weighting] = {
    "samples": lambda u: float(u.samples_processed),
    "examples": lambda u: float(u.num_examples),
    "uniform": lambda u: 1.0,
    "batch": lambda u: float(u.micro_batch * u.accumulation_steps),
    "steps": lambda u: float(u.steps),
}


def weighting(name: str) -> Weighting:
    """The weighting scheme called ``name``."""
    if name not in WEIGHTINGS:
        raise ConfigError(f"aggregation.weighting: unknown '{name}' (known: {', '.join(WEIGHTINGS)})")
    return WEIGHTINGS[name]
