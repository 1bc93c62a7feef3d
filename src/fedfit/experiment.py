"""Build an experiment from a validated config: the one place where objects are wired.

``build`` turns an :class:`~fedfit.config.ExperimentConfig` into live objects (data, fleet,
planner, orchestrator); :mod:`fedfit.runner` drives them and writes the run directory.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

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
from fedfit.autoconfig import label_counts
from fedfit.autoconfig import resolve as resolve_auto
from fedfit.automode import ModeSwitch
from fedfit.autorevise import AutoReviser, auto_reviser
from fedfit.config import ExperimentConfig
from fedfit.cost import MemoryModel, ModelCost, TaskPredictor, measure
from fedfit.data import FederatedData, build_federated_data
from fedfit.data.stream import DataStream, StreamSpec
from fedfit.devices import (
    DeviceTrace, Registry, TraceParams, generate_traces, load_csv_trace, profile_from_mapping,
)
from fedfit.devices.csv_trace import columns_from_start
from fedfit.devices.lazy_trace import LazyTrace, LazyTraces
from fedfit.devices.realistic import catalogue
from fedfit.errors import ConfigError
from fedfit.models import ModelSpec
from fedfit.orchestration.asynchronous import AsyncConfig, AsyncOrchestrator
from fedfit.orchestration.cohort import Cohort, enrol
from fedfit.orchestration.liveness import Liveness
from fedfit.orchestration.contract import Fleet
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.orchestration.sync import SyncConfig, SyncOrchestrator
from fedfit.cost.dp_memory import per_sample_gradient_costs
from fedfit.security.builders import attack_spec, local_dp, security_combine
from fedfit.sources import UserSources, exchange, model_spec, user_data
from fedfit.sources import num_stages as stage_count
from fedfit.policy import (
    BudgetEpochsPlanner, Deferral, DeferringSelector, FixedPlanner, OortSelector, Planner,
    ReadinessFirstSelector, Selector, StratifiedSelector, UniformSelector,
)
from fedfit.policy.batch_feedback import HistoryPlanner
from fedfit.policy.batch_planner import DynamicBatchPlanner
from fedfit.policy.stratified import TierFloorSelector
from fedfit.policy.auto import AutoDecision
from fedfit.policy.auto_switch import window as stall_window
from fedfit.policy.batching import BatchingRules, initial_batch
from fedfit.policy.width import WidthPlanner, WidthPolicy, common_width, nominal_state
from fedfit.policy.memory import MemoryPlanner, MemorySettings
from fedfit.policy.dynamite.bound import Budget, Estimates
from fedfit.policy.dynamite.calibrate import Calibration
from fedfit.policy.dynamite.planner import DynamitePlanner, DynamiteSettings
from fedfit.policy.planning import RoundObserver
from fedfit.simulation.batched import BatchedExecutor
from fedfit.simulation.executors import Executor, LocalExecutor, ProcessPoolExecutor
from fedfit.simulation.fleet import SimulatedFleet
from fedfit.simulation.threaded import ThreadExecutor
from fedfit.simulation.workload import Workload, WorkloadRecipe
from fedfit.training import OptimizerConfig, evaluate
from fedfit.training.static_bn import evaluate_static
from fedfit.types import DeviceProfile, Params


def data_kwargs(config: ExperimentConfig) -> dict[str, Any]:
    """Arguments of :func:`fedfit.data.build_federated_data` for this config."""
    d = config.data
    return {
        "dataset": d.dataset, "num_devices": config.num_devices, "partition": d.partition.kind,
        "seed": config.seed, "path": d.path, "dirichlet_alpha": d.partition.alpha,
        "shards_per_device": d.partition.shards_per_device, "synthetic_alpha": d.synthetic.alpha,
        "synthetic_beta": d.synthetic.beta, "synthetic_iid": d.synthetic.iid,
        "max_train_samples": d.max_train_samples, "max_test_samples": d.max_test_samples,
        "local_test_fraction": d.local_test_fraction, "pool": d.pool,
    }


def fleet_profiles(config: ExperimentConfig) -> list[DeviceProfile]:
    """One profile per device: tiers in config order, device ids counting up."""
    builtin = catalogue(config.fleet.catalogue)
    custom = {name: profile_from_mapping(name, spec, tiers=builtin) for name, spec in config.fleet.custom_tiers.items()}
    profiles: list[DeviceProfile] = []
    for name, count in config.fleet.tiers.items():
        profile = custom[name] if name in custom else _builtin_tier(builtin, name)
        profiles.extend([profile] * count)
    return profiles


def _builtin_tier(builtin: Mapping[str, DeviceProfile], name: str) -> DeviceProfile:
    if name not in builtin:
        raise ConfigError(f"unknown device tier {name!r} (known: {', '.join(builtin)})")
    return builtin[name]


def stream_spec(config: ExperimentConfig, profiles: list[DeviceProfile]) -> StreamSpec | None:
    """The ``data.stream`` section as a :class:`StreamSpec` (each device at its tier's rate)."""
    st = config.data.stream
    if st is None:
        return None
    unknown = sorted(set(st.rate_by_tier) - {p.tier for p in profiles})
    if unknown:
        raise ConfigError(f"data.stream.rate_by_tier: no tier '{unknown[0]}' in the fleet")
    return StreamSpec(rate_per_s=tuple(st.rate_by_tier.get(p.tier, st.rate_per_s) for p in profiles),
                      buffer_size=st.buffer_size, replacement=st.replacement, initial=st.initial,
                      burst_every_s=st.burst_every_s, burst_size=st.burst_size, drift_at_s=st.drift_at_s,
                      seed=config.seed)


#: Above this many devices ``fleet.trace_model: auto`` computes states lazily.
LAZY_TRACES_ABOVE = 10_000


def fleet_traces(config: ExperimentConfig, profiles: list[DeviceProfile]) -> Sequence[DeviceTrace | LazyTrace]:
    """Seeded generated traces (per-step arrays or lazy, ``fleet.trace_model``), with the user's
    CSV traces laid over the named devices."""
    params = TraceParams(step_s=config.fleet.trace_step_s)
    model = config.fleet.trace_model
    for device in config.fleet.traces:
        if not 0 <= device < len(profiles):
            raise ConfigError(f"fleet.traces.{device}: no such device (fleet has {len(profiles)})")
    lazy = model == "lazy" or (model == "auto" and len(profiles) > LAZY_TRACES_ABOVE)
    ids = list(config.fleet.traces) if lazy else list(range(len(profiles)))
    replaced = [columns_from_start(config.fleet.traces[i], config.fleet.max_trace_bytes)
                if i in config.fleet.traces else frozenset[str]() for i in ids]
    generated = dict(zip(ids, generate_traces([profiles[i] for i in ids], ids, seed=config.seed, params=params,
                                              replaced=replaced), strict=True))
    csv = {device: load_csv_trace(path, generated[device], config.fleet.max_trace_bytes)
           for device, path in config.fleet.traces.items()}
    if lazy:
        return LazyTraces(profiles, params, config.seed, overrides=csv)
    return [csv.get(i) or generated[i] for i in range(len(profiles))]


def memory_planner(config: ExperimentConfig, base: Planner, costs: Callable[[float], ModelCost],
                   memory: MemoryModel, spec: ModelSpec) -> MemoryPlanner:
    """The technique-fitting planner of the ``memory:`` section around ``base``."""
    m = config.memory
    settings = MemorySettings(
        mode=m.mode, techniques=tuple(m.techniques), candidates=tuple(m.candidates),
        selective_mode=m.selective.mode, selective_k=m.selective.k, keep_fraction=m.partial.keep_fraction,
        sparsities=tuple(m.pruning.sparsities), sparsity_by_tier=dict(m.pruning.by_tier), qat_bits=m.qat.bits,
        rounds_per_stage=m.progressive.rounds_per_stage, split_cut=m.split.cut,
        edge_flops_per_s=m.split.edge_flops_per_s, seed=config.seed)
    num_stages = stage_count(spec)
    if m.split.cut is not None and not 1 <= m.split.cut < num_stages:
        raise ConfigError(f"memory.split.cut: must be in 1..{num_stages - 1} for model {spec.name}")
    return MemoryPlanner(base, settings=settings, costs=costs, memory=memory, num_stages=num_stages)


@dataclass
class Experiment:
    """Live objects of one experiment."""

    config: ExperimentConfig
    workload: Workload
    fleet: SimulatedFleet
    orchestrator: SyncOrchestrator | AsyncOrchestrator | ModeSwitch
    executor: Executor
    initial_params: Params
    spec: ModelSpec | None = None
    submodels: SubModelExchange | None = None
    width: WidthPlanner | None = None
    registry: Registry | None = None
    auto: AutoDecision | None = None
    stream: DataStream | None = None
    reviser: AutoReviser | None = None

    @property
    def data(self) -> FederatedData:
        return self.workload.data


def _executor(config: ExperimentConfig, recipe: WorkloadRecipe, workload: Workload) -> Executor:
    if config.simulation.executor == "process":
        return ProcessPoolExecutor(recipe, config.simulation.workers)
    if config.simulation.executor == "batched":
        return BatchedExecutor(workload)
    if config.simulation.executor == "threads":
        return ThreadExecutor(workload, config.simulation.workers)
    if config.simulation.executor == "ray":
        from fedfit.simulation.ray_executor import RayExecutor  # Ray is an optional extra

        return RayExecutor(recipe, config.simulation.workers, config.simulation.ray_address)
    return LocalExecutor(workload)


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


def batching_rules(config: ExperimentConfig) -> BatchingRules:
    """The batch policy's parameters from the ``batching`` section."""
    b = config.batching
    return BatchingRules(
        standard_batch=b.standard_batch or config.training.batch_size,
        min_effective_batch=b.min_effective_batch, target_effective_batch=b.target_effective_batch,
        memory_margin=b.memory_margin, throughput_target=b.throughput_target, busy_cpu=b.busy_cpu,
        full_battery=b.full_battery, low_battery=b.low_battery, mid_battery_scale=b.mid_battery_scale,
        low_battery_work=b.low_battery_work, warm_scale=b.warm_scale, decline_hot=b.decline_hot,
        strong_wifi_bps=b.strong_wifi_bps if b.strong_wifi_bps is not None else float("inf"),
        wifi_batch_scale=b.wifi_batch_scale, wifi_epochs=b.wifi_epochs, poor_link_bps=b.poor_link_bps,
        poor_link_scale=b.poor_link_scale)


def _dynamic_planner(config: ExperimentConfig, costs: Callable[[float], ModelCost], memory: MemoryModel,
                     num_examples: list[int]) -> DynamicBatchPlanner | None:
    if config.batching.mode != "dynamic":
        return None
    t = config.training
    return DynamicBatchPlanner(rules=batching_rules(config), costs=costs, memory=memory,
                               num_examples=tuple(num_examples), local_epochs=t.local_epochs, lr=t.lr,
                               max_steps=t.max_steps, deadline_s=config.orchestration.deadline_s)


def _width_planner(config: ExperimentConfig, base: Planner, profiles: list[DeviceProfile],
                   examples: list[int], costs: Callable[[float], ModelCost], memory: MemoryModel) -> WidthPlanner:
    w = config.width
    deadline = w.deadline_s if w.deadline_s is not None else config.orchestration.deadline_s
    policy = WidthPolicy(mode=w.mode, widths=tuple(w.widths), fixed=w.fixed, deadline_s=deadline,
                         elastic=w.elastic, quantile=w.elastic_quantile)
    if w.mode == "common":
        probe = base.plan(0, 0, profiles[0], nominal_state(profiles[0]))
        fixed = common_width(probe, profiles, examples, widths=w.widths, costs=costs, memory=memory,
                             deadline_s=deadline)
        policy = WidthPolicy(mode="capability", widths=(fixed,), fixed=fixed, deadline_s=deadline,
                             elastic=w.elastic, quantile=w.elastic_quantile)
    return WidthPlanner(base, policy, costs, memory, examples, config.seed)


def cost_inputs(config: ExperimentConfig,
                spec: ModelSpec) -> tuple[OptimizerConfig, Callable[[float], ModelCost], MemoryModel]:
    """The run's optimiser, its model's measured costs per width, and the memory model over them."""
    t = config.training
    optimizer = OptimizerConfig(t.momentum, t.weight_decay, kind=t.optimizer, proximal_mu=t.proximal_mu,
                                local_dp=local_dp(config))
    costs: Callable[[float], ModelCost] = functools.partial(measure, spec)
    costs = per_sample_gradient_costs(costs) if config.privacy.local.enabled else costs
    memory = MemoryModel(optimizer_slots=optimizer.slots, workspace_bytes=config.memory.workspace_bytes,
                         step_temporaries=optimizer.step_temporaries)
    return optimizer, costs, memory


def build(config: ExperimentConfig, sources: UserSources | None = None) -> Experiment:
    """Build every object of an experiment from its config (and the user's model and data).

    Raises:
        ConfigError / DataError: the config names something that does not exist.
    """
    profiles = fleet_profiles(config)
    recipe_data = tuple(sorted(data_kwargs(config).items()))
    own = user_data(config, sources)
    data = own if own is not None else build_federated_data(**dict(recipe_data))
    spec = model_spec(config, data, sources)
    optimizer, costs, memory = cost_inputs(config, spec)
    recipe = WorkloadRecipe(spec, recipe_data, config.seed, optimizer, attack=attack_spec(config, profiles),
                            stream=stream_spec(config, profiles), data=own)
    workload = Workload(recipe, data)
    initial = initial_params(config, spec)
    executor = _executor(config, recipe, workload)
    num_examples = [len(d) for d in data.train]
    traces = fleet_traces(config, profiles)
    states = [tr.state_at(0.0) for tr in traces] if config.auto.enabled else []
    chosen, auto = resolve_auto(config, profiles, states, num_examples, costs, memory,
                                label_counts(data) if config.auto.enabled else None)
    config, asked = chosen, config
    dynamic = _dynamic_planner(config, costs, memory, num_examples)
    stream = workload.stream
    fleet = SimulatedFleet(profiles=profiles, traces=traces,
                           num_examples=num_examples, costs=costs, memory=memory,
                           executor=executor, adapter=dynamic, examples_at=stream.size if stream else None)
    submodels = exchange(spec, config.width.indices, config.seed)
    sizes: Callable[[float], list[int]] = (lambda now_s: [stream.size(d, now_s) for d in range(len(profiles))]) \
        if stream else (lambda now_s: num_examples)
    orchestrator, planner, registry = orchestrate(
        config, fleet, workload, spec=spec, costs=costs, memory=memory, num_examples=num_examples,
        profiles=profiles, initial=initial, dynamic=dynamic, submodels=submodels, sizes=sizes)
    reviser = auto_reviser(config, auto)
    driver: SyncOrchestrator | AsyncOrchestrator | ModeSwitch = orchestrator
    if isinstance(orchestrator, SyncOrchestrator):
        orchestrator.reviser = reviser
    elif auto is not None and config.auto.switch_on_stall:
        sync_config, sync_auto = resolve_auto(asked, profiles, states, num_examples, costs, memory,
                                              label_counts(data), mode="sync")
        sync, _, _ = orchestrate(
            sync_config, fleet, workload, spec=spec, costs=costs, memory=memory, num_examples=num_examples,
            profiles=profiles, initial=initial, dynamic=_dynamic_planner(sync_config, costs, memory, num_examples),
            submodels=submodels, sizes=sizes, registry=registry)
        assert isinstance(sync, SyncOrchestrator) and sync_auto is not None
        reviser = sync.reviser = auto_reviser(sync_config, sync_auto)
        trainable = sum(1 for t in auto.task_times if math.isfinite(t))
        driver = ModeSwitch(orchestrator, sync, stall_window(trainable, auto.buffer_size), config.orchestration.rounds)
    if len(profiles) > LAZY_TRACES_ABOVE:
        # The fleet's millions of long-lived objects (profiles, registry entries) leave the
        # cyclic collector's scans, which would otherwise make every round's full collections
        # cost O(fleet).
        gc.freeze()
    return Experiment(config, workload, fleet, driver, executor, initial, spec, submodels, planner, registry,
                      auto=auto, stream=stream, reviser=reviser)


def initial_params(config: ExperimentConfig, spec: ModelSpec) -> Params:
    """The run's starting model, drawn from the config's seed (the same in simulation and deployment)."""
    torch.manual_seed(config.seed)
    return {k: v.detach().clone() for k, v in spec.build().state_dict().items()}


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
                                sizes or (lambda now_s: num_examples), initial)
    batch = dynamite or _with_history(dynamic, registry)
    planner = _width_planner(config, _planner(config, predictor, batch, costs, memory, spec),
                             profiles, num_examples, costs, memory)
    evaluator = _evaluator(workload, config.width.calibration_samples)
    orchestrator = _orchestrator(config, fleet, planner, predictor, evaluator, dynamic, submodels, registry,
                                 dynamite)
    orchestrator.rule = dataclasses.replace(orchestrator.rule, combine=security_combine(config, workload))
    return orchestrator, planner, registry


def _with_history(dynamic: DynamicBatchPlanner | None, registry: Registry) -> Planner | None:
    """Dynamic batching's server side: each device's profile-only suggestion is stored in the
    registry at enrolment, and plans follow the device's history (:mod:`fedfit.policy.batch_feedback`)."""
    if dynamic is None:
        return None
    for device in registry.ids():
        profile = registry.profile(device)
        registry.suggest_batch(device, max(1, initial_batch(profile, dynamic.costs(1.0), dynamic.memory,
                                                            dynamic.rules)))
    return HistoryPlanner(dynamic, registry.history)


def dynamite_planner(config: ExperimentConfig, dynamic: DynamicBatchPlanner | None, registry: Registry,
                     costs: Callable[[float], ModelCost], memory: MemoryModel,
                     data_sizes: Callable[[float], list[int]], initial: Params) -> DynamitePlanner | None:
    """The ``dynamite:`` section's planner around the batch planner (``None`` when off)."""
    d, t, o = config.dynamite, config.training, config.orchestration
    if d.mode == "off":
        return None
    if config.local_work.kind == "budget":
        raise ConfigError("dynamite.mode: does not combine with local_work.kind 'budget' (both set local steps)")
    base: Planner = dynamic or FixedPlanner(batch_size=t.batch_size, local_epochs=t.local_epochs, lr=t.lr,
                                            max_steps=t.max_steps, deadline_s=o.deadline_s)
    cohort = o.clients_per_round if o.mode == "sync" else (config.asynchronous.concurrency or config.num_devices)
    p, c = d.prior, d.drift_calibration
    settings = DynamiteSettings(
        solver=d.mode, adapt=d.adapt, budget=Budget(time_s=d.budget_time_s, energy_j=d.budget_energy_j),
        prior=Estimates(beta=p.beta, rho=p.rho, delta=p.delta, sigma2=p.sigma2, loss=p.loss), tau_max=d.tau_max,
        holding=d.holding, warmup_rounds=d.warmup_rounds, max_accumulation=d.max_accumulation,
        participation=min(1.0, cohort / config.num_devices),
        calibration=Calibration(prior=c.prior, low=c.low, high=c.high, holding=c.holding) if c.enabled else None)
    return DynamitePlanner(base, settings, registry=registry, costs=costs, memory=memory,
                           data_sizes=data_sizes, lr=t.lr, initial_params=initial,
                           cap_of=(lambda pr, st: dynamic.readiness(pr, st)) if dynamic else None)


def _planner(config: ExperimentConfig, predictor: TaskPredictor, batch: Planner | None,
             costs: Callable[[float], ModelCost], memory: MemoryModel, spec: ModelSpec) -> Planner:
    """Batch (fixed, dynamic or DYNAMITE), then memory techniques, then local work; width wraps it all."""
    t, o, w = config.training, config.orchestration, config.local_work
    base: Planner = batch or FixedPlanner(batch_size=t.batch_size, local_epochs=t.local_epochs, lr=t.lr,
                                            max_steps=t.max_steps, deadline_s=o.deadline_s)
    if config.memory.mode != "off":
        base = memory_planner(config, base, costs, memory, spec)
    if w.kind == "budget":
        return BudgetEpochsPlanner(base, predictor, w.budget_s, w.min_epochs, w.max_epochs)
    return base


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


def _rule(config: ExperimentConfig) -> AggregationRule:
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
                                 rule=_rule(config), evaluator=evaluator, config=acfg, seed=config.seed,
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
                            config=sync, seed=config.seed, rule=_rule(config), cohort=cohort,
                            submodels=submodels, registry=registry, observer=observer)


@contextmanager
def built(config: ExperimentConfig, sources: UserSources | None = None) -> Iterator[Experiment]:
    """:func:`build`, closing the executor afterwards."""
    exp = build(config, sources)
    try:
        yield exp
    finally:
        exp.executor.close()
