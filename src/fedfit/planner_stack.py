"""The planner stack of a config: batch (fixed, dynamic or DYNAMITE), memory techniques, local
work and width, outermost last (:func:`fedfit.orchestrator_wiring.orchestrate` puts it under an
orchestrator)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fedfit.config import ExperimentConfig
from fedfit.cost import MemoryModel, ModelCost, TaskPredictor
from fedfit.devices import Registry
from fedfit.errors import ConfigError
from fedfit.models import ModelSpec
from fedfit.sources import num_stages as stage_count
from fedfit.policy import BudgetEpochsPlanner, FixedPlanner, Planner
from fedfit.policy.batch_feedback import HistoryPlanner
from fedfit.policy.batch_planner import DynamicBatchPlanner
from fedfit.policy.batching import BatchingRules, initial_batch
from fedfit.policy.width import WidthPlanner, WidthPolicy, common_width, nominal_state
from fedfit.policy.memory import MemoryPlanner, MemorySettings
from fedfit.policy.dynamite.bound import Budget, Estimates
from fedfit.policy.dynamite.calibrate import Calibration
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.policy.dynamite.settings import DynamiteSettings
from fedfit.types import DeviceProfile, Params


def memory_planner(config: ExperimentConfig, base: Planner, costs: Callable[[float], ModelCost],
                   memory: MemoryModel, spec: ModelSpec, num_examples: Sequence[int] = ()) -> MemoryPlanner:
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
    return MemoryPlanner(base, settings=settings, costs=costs, memory=memory, num_stages=num_stages,
                         num_examples=num_examples)


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


def dynamic_planner(config: ExperimentConfig, costs: Callable[[float], ModelCost], memory: MemoryModel,
                     num_examples: list[int]) -> DynamicBatchPlanner | None:
    if config.batching.mode != "dynamic":
        return None
    t = config.training
    return DynamicBatchPlanner(rules=batching_rules(config), costs=costs, memory=memory,
                               num_examples=tuple(num_examples), local_epochs=t.local_epochs, lr=t.lr,
                               max_steps=t.max_steps, deadline_s=config.orchestration.deadline_s)


def width_planner(config: ExperimentConfig, base: Planner, profiles: list[DeviceProfile],
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


def planner_chain(config: ExperimentConfig, predictor: TaskPredictor, batch: Planner | None,
             costs: Callable[[float], ModelCost], memory: MemoryModel, spec: ModelSpec) -> Planner:
    """Batch (fixed, dynamic or DYNAMITE), then memory techniques, then local work; width wraps it all."""
    t, o, w = config.training, config.orchestration, config.local_work
    base: Planner = batch or FixedPlanner(batch_size=t.batch_size, local_epochs=t.local_epochs, lr=t.lr,
                                            max_steps=t.max_steps, deadline_s=o.deadline_s)
    if config.memory.mode != "off":
        base = memory_planner(config, base, costs, memory, spec, predictor.num_examples)
    if w.kind == "budget":
        return BudgetEpochsPlanner(base, predictor, w.budget_s, w.min_epochs, w.max_epochs)
    return base


def planner_with_history(dynamic: DynamicBatchPlanner | None, registry: Registry) -> Planner | None:
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
                     data_sizes: Callable[[float], list[int]], initial: Params,
                     held: Callable[[int, float], Sequence[int]] | None = None) -> DynamitePlanner | None:
    """The ``dynamite:`` section's planner around the batch planner (``None`` when off); ``held``:
    the samples a device's stream buffer holds at a time (with ``stream_turnover``, σ² is read
    net of their turnover)."""
    d, t, o = config.dynamite, config.training, config.orchestration
    if d.mode == "off":
        return None
    if config.local_work.kind == "budget":
        by_auto = ", auto's choice: set auto.enabled: false" if config.auto.enabled else ""
        raise ConfigError(f"dynamite.mode: does not combine with local_work.kind 'budget' (both set local steps{by_auto})")
    base: Planner = dynamic or FixedPlanner(batch_size=t.batch_size, local_epochs=t.local_epochs, lr=t.lr,
                                            max_steps=t.max_steps, deadline_s=o.deadline_s)
    cohort = o.clients_per_round if o.mode == "sync" else (config.asynchronous.concurrency or config.num_devices)
    p, c = d.prior, d.drift_calibration
    settings = DynamiteSettings(
        solver=d.mode, adapt=d.adapt, budget=Budget(time_s=d.budget_time_s, energy_j=d.budget_energy_j,
                                                  whole_rounds=d.whole_rounds),
        prior=Estimates(beta=p.beta, rho=p.rho, delta=p.delta, sigma2=p.sigma2, loss=p.loss), tau_max=d.tau_max,
        holding=d.holding, warmup_rounds=d.warmup_rounds, max_accumulation=d.max_accumulation,
        participation=min(1.0, cohort / config.num_devices),
        streaming=d.stream_noise and config.data.stream is not None,
        calibration=Calibration(prior=c.prior, low=c.low, high=c.high, holding=c.holding) if c.enabled else None,
        energy_cap=d.energy_cap, plan_for=d.plan_for,
        sigma_probe=d.sigma_probe and not config.privacy.local.enabled,  # DP-SGD steps take no probe
        noise_model=d.noise_model if config.data.stream is None else "iid",  # a stream's: ``streaming``
        last_round=d.last_round, curvature_latest=d.curvature_estimate == "latest",
        sigma_latest=d.sigma_estimate == "latest", slack_fill=d.slack_fill)
    return DynamitePlanner(base, settings, registry=registry, costs=costs, memory=memory,
                           data_sizes=data_sizes, lr=t.lr, initial_params=initial,
                           cap_of=(lambda pr, st: dynamic.readiness(pr, st)) if dynamic else None,
                           held=held if d.stream_turnover else None)
