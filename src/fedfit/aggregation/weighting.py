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

:class:`LossWeighted` raises any of them to a fairness-aware weight, w_i · F_i^q with F_i the
update's training loss: q-FFL's reweighting (Li, Sanjabi, Beirami and Smith 2020, "Fair Resource
Allocation in Federated Learning", ICLR), which gives devices the model serves badly more say.
q = 0 is the base weighting. Unlike q-FedAvg, F_i is the mean loss over the local task (not the
global model's loss before it) and the step is not rescaled by the Lipschitz estimate h_i.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

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


@dataclass(frozen=True, slots=True)
class LossWeighted:
    """``base`` weight times the update's training loss to the power ``q`` (q-FFL's F_i^q).

    A non-finite or non-positive loss counts as 1 (the base weight), so a diverged task
    neither dominates nor vanishes by this factor.

    >>> LossWeighted(WEIGHTINGS["uniform"], 2.0)(Update(0, 0, {}, 1, 1, 1, 1, 1, 0.5))
    0.25
    """

    base: Weighting
    q: float

    def __call__(self, update: Update) -> float:
        loss = update.train_loss
        factor = loss**self.q if math.isfinite(loss) and loss > 0 else 1.0
        return self.base(update) * factor
