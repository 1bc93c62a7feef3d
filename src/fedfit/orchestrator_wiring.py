"""The registry, planner stack, aggregation rule and orchestrator of a config over a fleet,
simulated or over the network: one wiring for both (:func:`orchestrate`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch

from fedfit.aggregation import (
    AggregationRule,
    LocalSolver,
    LossWeighted,
    MeanInterval,
    StalenessDiscount,
    Weighting,
    unweighted,
    weighting,
)
from fedfit.config import ExperimentConfig
from fedfit.cost import MemoryModel, ModelCost, TaskPredictor
from fedfit.data import FederatedData
from fedfit.devices import Registry
from fedfit.models import ModelSpec
from fedfit.orchestration.asynchronous import AsyncConfig, AsyncOrchestrator
from fedfit.orchestration.cohort import Cohort, enrol
from fedfit.orchestration.liveness import Liveness
from fedfit.orchestration.contract import Fleet
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.orchestration.sync import SyncConfig, SyncOrchestrator
from fedfit.security.builders import security_combine
from fedfit.policy import (
    Deferral, DeferringSelector, OortSelector, Planner, ReadinessFirstSelector, Selector, StratifiedSelector,
    UniformSelector,
)
from fedfit.policy.batch_planner import DynamicBatchPlanner
from fedfit.policy.stratified import TierFloorSelector
from fedfit.policy.width import WidthPlanner
from fedfit.policy.planning import RoundObserver
from fedfit.simulation.workload import Workload
from fedfit.training import evaluate
from fedfit.training.static_bn import evaluate_static
from fedfit.types import DeviceProfile, Params
from fedfit.planner_stack import dynamite_planner, planner_chain, planner_with_history, width_planner


def orchestrate(config: ExperimentConfig, fleet: Fleet, workload: Workload, *, spec: ModelSpec,
                costs: Callable[[float], ModelCost], memory: MemoryModel, num_examples: list[int],
                profiles: list[DeviceProfile], initial: Params, dynamic: DynamicBatchPlanner | None,
                submodels: SubModelExchange, sizes: Callable[[float], list[int]] | None = None,
                registry: Registry | None = None,
                ) -> tuple[SyncOrchestrator | AsyncOrchestrator, WidthPlanner, Registry]:
    """The registry, planner stack and orchestrator of ``config`` over ``fleet``, simulated or over
    the network (:mod:`fedfit.transport.assemble`): one wiring for both.

    Args:
        sizes: each device's data size at a time (streaming data); ``None``: ``num_examples``.
        registry: the registry to share (``auto``'s second, sync orchestrator); ``None``: a new one.

    Returns:
        The orchestrator (its rule's ``combine`` set by the config's security section), the
        planner stack (width outermost) and the registry enrolled from ``fleet``.
    """
    predictor = TaskPredictor(costs, memory, num_examples)
    # first plans from each profile's suggestion, later ones from its reports
    registry = registry if registry is not None else enrol(fleet)
    dynamite = dynamite_planner(config, dynamic, registry, costs, memory,
                                sizes or (lambda now_s: num_examples), initial,
                                held=workload.stream.held if workload.stream is not None else None)
    batch = dynamite or planner_with_history(dynamic, registry)
    planner = width_planner(config, planner_chain(config, predictor, batch, costs, memory, spec),
                             profiles, num_examples, costs, memory)
    evaluator = _evaluator(workload, config.width.calibration_samples)
    orchestrator = _orchestrator(config, fleet, planner, predictor, evaluator, dynamic, submodels, registry,
                                 dynamite)
    orchestrator.rule = dataclasses.replace(orchestrator.rule, combine=security_combine(config, workload))
    return orchestrator, planner, registry


def calibration_inputs(data: FederatedData, samples: int, seed: int) -> torch.Tensor:
    """Up to ``samples`` training inputs drawn across devices (static batch-norm statistics)."""
    x = torch.cat([d.x for d in data.train])
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    return x[order[:samples]]


def _evaluator(workload: Workload, calibration: int) -> Callable[[Params], tuple[float, float]]:
    test, spec = workload.data.global_test, workload.recipe.model
    if spec.norm != "none":
        calib = calibration_inputs(workload.data, calibration, workload.recipe.seed)
        return lambda params: evaluate_static(spec, 1.0, params, calib, test.x, test.y)
    model = workload.module(1.0)
    return lambda params: evaluate(model, params, test.x, test.y)


#: Above this many devices ``orchestration.candidates: auto`` samples candidates.
SAMPLE_CANDIDATES_ABOVE = 10_000


def candidate_count(setting: int | str, devices: int, invited: int, *, uniform: bool) -> int | None:
    """Idle devices a sync round (or an async invitation, ``invited`` = its buffer) checks in
    (``orchestration.candidates``); ``None``: all of them.

    ``auto``: all up to :data:`SAMPLE_CANDIDATES_ABOVE` devices; above, the invited count for
    uniform selection (a uniform draw from a uniform sample is uniform) and 4x that for
    readiness-based selectors, which need spare candidates to defer.

    >>> candidate_count("auto", 1_000_000, 1000, uniform=False), candidate_count("auto", 100, 10, uniform=True)
    (4000, None)
    """
    if setting == "all" or (setting == "auto" and devices <= SAMPLE_CANDIDATES_ABOVE):
        return None
    if isinstance(setting, int):
        return setting
    return invited if uniform else 4 * invited


def _selector(config: ExperimentConfig) -> Selector:
    s = config.selection
    inner: Selector = StratifiedSelector() if s.stratify else UniformSelector()
    if s.kind == "oort":
        inner = OortSelector(s.oort.exploration, s.oort.cutoff, s.oort.penalty, s.oort.preferred_duration_s)
    chosen: Selector = UniformSelector()
    deferral = None
    if s.kind != "uniform":
        d = s.defer
        deferral = Deferral(d.min_battery, d.defer_hot, d.require_batch, d.max_duration_s)
        chosen = DeferringSelector(inner, deferral)
    if config.batching.selection == "readiness":
        chosen = ReadinessFirstSelector(chosen, config.batching.low_readiness)
    if s.tier_floor > 0 and chosen != UniformSelector():  # uniform draws are proportional already
        chosen = TierFloorSelector(chosen, s.tier_floor, deferral)
    return chosen


def _cohort(config: ExperimentConfig, planner: Planner, predictor: TaskPredictor,
            dynamic: DynamicBatchPlanner | None) -> Cohort | None:
    if config.selection.kind == "uniform" and config.batching.selection == "uniform":
        return None
    return Cohort(planner, _selector(config), predictor, dynamic.plan_readiness if dynamic else None)


def weighting_name(config: ExperimentConfig) -> str:
    """``orchestration.weighting``, except that DYNAMITE turns the default ``samples`` into
    ``examples``: its bound averages the devices' models by data share p_i = D_i / D, and with
    a batch b_i per device, samples processed (τ · b_i) would weight each device by its batch."""
    w = config.orchestration.weighting
    return "examples" if config.dynamite.mode != "off" and w == "samples" else w


def aggregation_rule(config: ExperimentConfig) -> AggregationRule:
    a, t, st = config.aggregation, config.training, config.aggregation.staleness
    fedasync = config.orchestration.mode == "async" and config.asynchronous.algorithm == "fedasync"
    base = weighting(weighting_name(config))
    weights: Weighting = LossWeighted(base, a.fairness_q) if a.fairness_q > 0 else base
    return AggregationRule(
        weighting=weights,
        participation=MeanInterval(a.participation.cutoff) if a.participation.kind == "interval" else unweighted,
        staleness=StalenessDiscount(st.kind, st.exponent, st.hinge_a, st.hinge_b),
        server_lr=config.asynchronous.mixing if fedasync else a.server_lr,
        fednova=LocalSolver(t.momentum, t.lr * t.proximal_mu) if a.fednova else None)


def _orchestrator(config: ExperimentConfig, fleet: Fleet, planner: Planner, predictor: TaskPredictor,
                  evaluator: Callable[[Params], tuple[float, float]], dynamic: DynamicBatchPlanner | None,
                  submodels: SubModelExchange, registry: Registry,
                  observer: RoundObserver | None = None) -> SyncOrchestrator | AsyncOrchestrator:
    o = config.orchestration
    cohort = _cohort(config, planner, predictor, dynamic)
    liveness = Liveness(stall_timeout_s=o.stall_timeout_s, max_wall_s=o.max_wall_s)
    if o.mode == "async":
        a = config.asynchronous
        k = 1 if a.algorithm == "fedasync" else a.buffer_size
        acfg = AsyncConfig(aggregations=o.rounds, buffer_size=k, concurrency=a.concurrency,
                           max_staleness=o.max_staleness, retry_after_s=a.retry_after_s,
                           backoff_cap_s=o.backoff_cap_s, eval_every=config.evaluation.every,
                           liveness=liveness,
                           candidates=candidate_count(o.candidates, config.num_devices, k, uniform=cohort is None))
        return AsyncOrchestrator(fleet=fleet, cohort=cohort or Cohort(planner, UniformSelector(), predictor),
                                 rule=aggregation_rule(config), evaluator=evaluator, config=acfg, seed=config.seed,
                                 submodels=submodels, registry=registry, observer=observer)
    sync = SyncConfig(rounds=o.rounds, clients_per_round=o.clients_per_round,
                      over_selection=o.over_selection, deadline_s=o.deadline_s,
                      eval_every=config.evaluation.every, late_updates=o.late_updates,
                      max_staleness=o.max_staleness, liveness=liveness,
                      candidates=candidate_count(o.candidates, config.num_devices,
                                                 math.ceil(o.clients_per_round * (1 + o.over_selection)),
                                                 uniform=cohort is None))
    return SyncOrchestrator(fleet=fleet, planner=planner, weighting=weighting(weighting_name(config)),
                            evaluator=evaluator,
                            config=sync, seed=config.seed, rule=aggregation_rule(config), cohort=cohort,
                            submodels=submodels, registry=registry, observer=observer)
