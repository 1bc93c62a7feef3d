"""``fedavg-tuned``: FedAvg as a competent user would run it, chosen by a small grid.

Plain synchronous FedAvg (uniform selection, fixed batch, the config's local epochs, full model,
no memory technique, sample-weighted mean) over a grid of
fixed batch × deadline × over-selection on the same fleet and seed. Deadlines come from the
predicted task times of plain FedAvg at that batch (devices that run out of memory at that batch
left out): none, their median, their 90th percentile. Over-selection is 0 or 0.3. The chosen
point is the one that reaches the target accuracy soonest on the virtual clock; if none reaches
it, the best final accuracy (then the shorter run). Ties keep the earlier grid point.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fedfit.autoconfig import fixed_batch_times
from fedfit.config import ExperimentConfig, with_overrides
from fedfit.cost import MemoryModel, TaskPredictor, measure
from fedfit.data import build_federated_data
from fedfit.inputs import data_kwargs, fleet_profiles, fleet_traces
from fedfit.models import ModelSpec
from fedfit.policy.auto import quantile
from fedfit.training import OptimizerConfig

BATCHES: tuple[int, ...] = (8, 16, 32)
QUANTILES: tuple[float | None, ...] = (None, 0.5, 0.9)
OVER_SELECTIONS: tuple[float, ...] = (0.0, 0.3)


@dataclass(frozen=True, slots=True)
class GridPoint:
    """One candidate of the grid: batch, deadline (and the quantile it came from), over-selection."""

    batch: int
    quantile: float | None
    deadline_s: float | None
    over_selection: float

    def overrides(self) -> dict[str, Any]:
        """Dotted config overrides of plain FedAvg at this point."""
        return {"auto.enabled": False, "training.batch_size": self.batch, "batching.mode": "fixed",
                "batching.selection": "uniform", "orchestration.mode": "sync",
                "orchestration.deadline_s": self.deadline_s, "orchestration.over_selection": self.over_selection,
                "orchestration.weighting": "samples", "selection.kind": "uniform", "local_work.kind": "fixed",
                "memory.mode": "off", "memory.techniques": [], "width.mode": "fixed", "width.fixed": 1.0,
                "aggregation.fednova": False, "aggregation.fairness_q": 0.0,
                "aggregation.participation.kind": "none"}


@dataclass(frozen=True, slots=True)
class GridResult:
    """What one grid point's run reached."""

    point: GridPoint
    time_to_target_s: float | None
    final_accuracy: float
    virtual_time_s: float


def grid(times_by_batch: Mapping[int, Sequence[float]]) -> list[GridPoint]:
    """The grid over ``BATCHES × QUANTILES × OVER_SELECTIONS`` given predicted task times per batch.

    A quantile deadline is taken over the finite times; with none finite, only "no deadline" remains.
    """
    points: list[GridPoint] = []
    for batch, times in times_by_batch.items():
        finite = [t for t in times if math.isfinite(t)]
        for q in QUANTILES:
            if q is not None and not finite:
                continue
            deadline = None if q is None else round(quantile(finite, q), 3)
            points.extend(GridPoint(batch, q, deadline, over) for over in OVER_SELECTIONS)
    return points


def _rank(r: GridResult) -> tuple[int, float, float, float]:
    if r.time_to_target_s is not None:
        return (0, r.time_to_target_s, 0.0, 0.0)
    return (1, 0.0, -r.final_accuracy, r.virtual_time_s)


def choose(results: Sequence[GridResult]) -> GridResult:
    """The soonest to target; if none reached it, the most accurate, then the shortest (first on ties)."""
    if not results:
        raise ValueError("choose from an empty grid")
    return min(results, key=_rank)


def predicted_times(config: ExperimentConfig, batches: Sequence[int] = BATCHES) -> dict[int, list[float]]:
    """Predicted plain-FedAvg task times per device for each batch, on the states reported at t = 0."""
    data = build_federated_data(**data_kwargs(config))
    spec = ModelSpec(config.model.name, data.input_shape, data.num_classes, config.model.width,
                     config.model.norm, config.width.scaler)
    t = config.training
    slots = OptimizerConfig(t.momentum, t.weight_decay, kind=t.optimizer, proximal_mu=t.proximal_mu).slots
    memory = MemoryModel(optimizer_slots=slots, workspace_bytes=config.memory.workspace_bytes)
    predictor = TaskPredictor(lambda w: measure(spec, w), memory, [len(d) for d in data.train])
    profiles = fleet_profiles(config)
    states = [tr.state_at(0.0) for tr in fleet_traces(config, profiles)]
    return {b: fixed_batch_times(profiles, states, predictor, b, t.lr) for b in batches}


def result_of(point: GridPoint, summary: Mapping[str, Any]) -> GridResult:
    """A grid point's result from its run's summary."""
    return GridResult(point, summary["time_to_target_s"], summary["final_accuracy"] or 0.0, summary["virtual_time_s"])


def tune(config: ExperimentConfig,
         run_point: Callable[[ExperimentConfig], Mapping[str, Any]]) -> tuple[GridResult, list[GridResult]]:
    """Run every grid point with ``run_point`` (config → its summary) and choose one.

    Returns:
        The chosen point's result and every point's, in grid order.
    """
    results = []
    for point in grid(predicted_times(config)):
        results.append(result_of(point, run_point(with_overrides(config, point.overrides()))))
    return choose(results), results
