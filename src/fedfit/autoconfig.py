"""Wiring of ``auto``: fleet outlooks in, a resolved config out; and when a config "names none".

:func:`outlooks` turns what the server knows before the first round — each device's profile, the
state it reported on enrolment, its data size, the measured model and the memory model — into
the :class:`~fedfit.policy.auto.DeviceOutlook` values the pure rules of
:mod:`fedfit.policy.auto` read; :func:`resolve` applies their decision to the config as dotted
overrides, so the planners the rules switch on make the per-device, per-round choices.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from fedfit.aggregation.staleness import StalenessDiscount
from fedfit.config import ExperimentConfig, with_overrides
from fedfit.cost import MemoryModel, ModelCost, TaskPredictor
from fedfit.data import FederatedData
from fedfit.errors import PlanError
from fedfit.policy.auto import TIER_FLOOR, AutoDecision, DeviceOutlook, decide
from fedfit.policy.auto_rates import label_skew
from fedfit.types import DeviceProfile, DeviceState, TrainPlan

#: Keys ``auto`` decides. A config file that sets none of them (nor an ``auto`` section) "names no
#: strategy", and ``fedfit run`` runs it with ``auto.enabled: true``. A section name stands for
#: every key below it.
DECIDED_KEYS: tuple[str, ...] = (
    "auto", "training.batch_size", "batching", "memory.mode", "memory.techniques", "width",
    "orchestration.mode", "orchestration.deadline_s", "orchestration.over_selection",
    "orchestration.weighting", "asynchronous", "selection", "local_work", "aggregation",
)
#: Keys that name a strategy auto does not decide: a config setting one (a ``dynamite:`` section
#: on its own) runs as written, not under auto (whose local work DYNAMITE refuses).
OWN_STRATEGY_KEYS: tuple[str, ...] = ("dynamite",)


def names_no_strategy(raw: Mapping[str, Any], sets: Mapping[str, Any] | None = None) -> bool:
    """Whether a raw YAML mapping and ``--set`` overrides leave every key of :data:`DECIDED_KEYS`
    and :data:`OWN_STRATEGY_KEYS` unset."""
    for dotted in DECIDED_KEYS + OWN_STRATEGY_KEYS:
        if any(key == dotted or key.startswith(dotted + ".") for key in sets or {}):
            return False
        node: Any = raw
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                break
            node = node[part]
        else:
            return False
    return True


def _outlook(device: int, profile: DeviceProfile, state: DeviceState, predictor: TaskPredictor,
             standard_batch: int, lr: float, skew: float) -> DeviceOutlook:
    memory = predictor.memory.for_device(profile)
    cost: ModelCost = predictor.costs(1.0)
    fixed = memory.peak_bytes(cost, 0)
    per_sample = cost.activation_bytes_per_sample + cost.backward_transient_bytes_per_sample
    # What the batch policy will read: the reported free memory (less than the profile's budget
    # when other apps hold some), so rule 1's margin never excludes a device that fits one sample.
    budget = min(profile.training_memory_bytes, state.free_memory_bytes)
    fits = min(standard_batch, memory.max_micro_batch(cost, budget))
    task_s = math.inf
    if fits > 0:
        plan = TrainPlan(device_id=device, round=0, micro_batch=fits, lr=lr)
        task_s = predictor.cost(plan, profile, state).duration_s
    return DeviceOutlook(budget_bytes=budget, fixed_bytes=fixed, sample_bytes=per_sample,
                         task_s=task_s, num_examples=predictor.num_examples[device], label_skew=skew)


def outlooks(profiles: Sequence[DeviceProfile], states: Sequence[DeviceState], predictor: TaskPredictor,
             standard_batch: int, lr: float, label_counts: Sequence[Sequence[int]] | None = None) -> list[DeviceOutlook]:
    """One outlook per device: plain model at full width, its largest batch up to ``standard_batch``;
    its label skew from ``label_counts`` (each device's count per class; ``None``: 0)."""
    skews = label_skew(label_counts) if label_counts else [0.0] * len(profiles)
    return [_outlook(i, p, s, predictor, standard_batch, lr, h)
            for i, (p, s, h) in enumerate(zip(profiles, states, skews, strict=True))]


def label_counts(data: FederatedData) -> list[list[int]]:
    """Each device's training-label count per class: what a device reports at enrolment."""
    return [torch.bincount(d.y, minlength=data.num_classes).tolist() for d in data.train]


def fixed_batch_times(profiles: Sequence[DeviceProfile], states: Sequence[DeviceState], predictor: TaskPredictor,
                      batch: int, lr: float) -> list[float]:
    """Predicted task seconds of plain FedAvg at micro-batch ``batch`` (``inf``: runs out of memory)."""
    cost = predictor.costs(1.0)
    times = []
    for i, (p, s) in enumerate(zip(profiles, states, strict=True)):
        fits = predictor.memory.for_device(p).max_micro_batch(cost, p.training_memory_bytes) >= batch
        plan = TrainPlan(device_id=i, round=0, micro_batch=batch, lr=lr)
        times.append(predictor.cost(plan, p, s).duration_s if fits else math.inf)
    return times


def overrides(decision: AutoDecision, rounds: int | None = None) -> dict[str, Any]:
    """The dotted config overrides that switch on the planners ``decision`` chose; with ``rounds``
    (the config's), the versions an async run applies for the same updates (rule 5's budget)."""
    budget = {} if rounds is None else {"orchestration.rounds": math.ceil(rounds * decision.rounds_scale - 1e-9)}
    return budget | {
        "batching.mode": "dynamic", "batching.selection": "uniform",
        "batching.memory_margin": decision.memory_margin, "batching.standard_batch": decision.standard_batch,
        "orchestration.mode": decision.mode, "orchestration.deadline_s": decision.deadline_s,
        "orchestration.over_selection": decision.over_selection, "orchestration.weighting": "samples",
        "asynchronous.algorithm": "fedbuff", "asynchronous.buffer_size": decision.buffer_size,
        "memory.mode": decision.memory_mode, "memory.techniques": [],
        "width.mode": decision.width_mode, "width.indices": "prefix",
        "aggregation.participation.kind": decision.participation, "aggregation.fairness_q": 0.0,
        "local_work.kind": "fixed" if decision.epoch_budget_s is None else "budget",
        "local_work.budget_s": decision.epoch_budget_s or 10.0, "local_work.min_epochs": 1,
        "local_work.max_epochs": decision.max_epochs, "selection.kind": "compute_aware", "selection.stratify": True,
        "selection.tier_floor": TIER_FLOOR,  # explicit: auto keeps its floor whatever the config says
        "selection.defer.require_batch": decision.defer_unfit,
    }


def has_width(costs: Callable[[float], ModelCost]) -> bool:
    """Whether the model has a width to scale: its half-width sub-model has fewer parameters (a
    custom factory without a ``width`` argument has no sub-model at all)."""
    try:
        return costs(0.5).num_params < costs(1.0).num_params
    except PlanError:
        return False


def resolve(config: ExperimentConfig, profiles: Sequence[DeviceProfile], states: Sequence[DeviceState],
            num_examples: Sequence[int], costs: Callable[[float], ModelCost], memory: MemoryModel,
            label_counts: Sequence[Sequence[int]] | None = None,
            mode: str | None = None) -> tuple[ExperimentConfig, AutoDecision | None]:
    """``config`` with ``auto``'s decision applied (unchanged, ``None``, when auto is off);
    ``label_counts``: each device's reported count per class (``None``: no label skew known);
    ``mode``: ``sync`` or ``async`` imposed instead of rule 5's choice (the stall switch's sync
    decision)."""
    if not config.auto.enabled:
        return config, None
    predictor = TaskPredictor(costs, memory, num_examples)
    standard = config.batching.standard_batch or config.training.batch_size
    devices = outlooks(profiles, states, predictor, standard, config.training.lr, label_counts)
    scalable = has_width(costs)
    st = config.aggregation.staleness
    discount = StalenessDiscount(st.kind, st.exponent, st.hinge_a, st.hinge_b)
    decision = decide(devices, config.orchestration.clients_per_round, config.auto.async_advantage, scalable, discount,
                      mode)
    return with_overrides(config, overrides(decision, config.orchestration.rounds)), decision

