"""The memory cost of local DP-SGD: one gradient per sample of the micro-batch.

DP-SGD (:mod:`fedfit.training.dp_sgd`) materialises every sample's gradient before clipping,
so a micro-batch of m samples holds m × (parameter bytes) more than plain backward. Charging it
as backward-transient bytes per sample makes every consumer of the memory model (the fleet's
out-of-memory check, the task predictor, dynamic batching's largest micro-batch) see it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from fedfit.cost.profile import ModelCost


def with_per_sample_gradients(cost: ModelCost) -> ModelCost:
    """``cost`` with the per-sample gradients (param bytes per sample) added to its backward transient."""
    return dataclasses.replace(
        cost, backward_transient_bytes_per_sample=cost.backward_transient_bytes_per_sample + cost.param_bytes)


def per_sample_gradient_costs(costs: Callable[[float], ModelCost]) -> Callable[[float], ModelCost]:
    """A width → cost function charging per-sample gradients at every width."""
    return lambda width: with_per_sample_gradients(costs(width))
