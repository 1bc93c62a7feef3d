"""Build and run an experiment from a validated config (the runner: the I/O edge).

``build`` turns an :class:`~fedfit.config.ExperimentConfig` into live objects (data, fleet,
planner, orchestrator); ``run`` drives the rounds, writes the run directory and returns the
summary. Nothing below this module reads files, flags or the environment.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from fedfit.aggregation import weighting
from fedfit.config import ExperimentConfig
from fedfit.cost import MemoryModel, ModelCost, measure
from fedfit.data import FederatedData, build_federated_data
from fedfit.devices import DeviceTrace, generate_trace, load_csv_trace, profile_from_mapping, tier
from fedfit.errors import ConfigError
from fedfit.models import ModelSpec
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.orchestration.sync import RoundOutcome, SyncConfig, SyncOrchestrator
from fedfit.policy import FixedPlanner, Planner
from fedfit.policy.width import WidthPlanner, WidthPolicy, common_width, nominal_state
from fedfit.report import RunDirectory, summarise
from fedfit.report.model_file import save_model
from fedfit.simulation.executors import Executor, LocalExecutor, ProcessPoolExecutor
from fedfit.simulation.fleet import SimulatedFleet
from fedfit.simulation.workload import Workload, WorkloadRecipe
from fedfit.training import OptimizerConfig, evaluate
from fedfit.training.static_bn import evaluate_static
from fedfit.types import DeviceProfile, Params, RoundReport


def data_kwargs(config: ExperimentConfig) -> dict[str, Any]:
    """Arguments of :func:`fedfit.data.build_federated_data` for this config."""
    d = config.data
    return {
        "dataset": d.dataset, "num_devices": config.num_devices, "partition": d.partition.kind,
        "seed": config.seed, "path": d.path, "dirichlet_alpha": d.partition.alpha,
        "shards_per_device": d.partition.shards_per_device, "synthetic_alpha": d.synthetic.alpha,
        "synthetic_beta": d.synthetic.beta, "synthetic_iid": d.synthetic.iid,
        "max_train_samples": d.max_train_samples, "max_test_samples": d.max_test_samples,
        "local_test_fraction": d.local_test_fraction,
    }


def fleet_profiles(config: ExperimentConfig) -> list[DeviceProfile]:
    """One profile per device: tiers in config order, device ids counting up."""
    custom = {name: profile_from_mapping(name, spec) for name, spec in config.fleet.custom_tiers.items()}
    profiles: list[DeviceProfile] = []
    for name, count in config.fleet.tiers.items():
        profile = custom[name] if name in custom else tier(name)
        profiles.extend([profile] * count)
    return profiles


def fleet_traces(config: ExperimentConfig, profiles: list[DeviceProfile]) -> list[DeviceTrace]:
    """Seeded generated traces, with the user's CSV traces laid over the named devices."""
    traces = [generate_trace(p, seed=config.seed, device_id=i) for i, p in enumerate(profiles)]
    for device, path in config.fleet.traces.items():
        if not 0 <= device < len(traces):
            raise ConfigError(f"fleet.traces.{device}: no such device (fleet has {len(traces)})")
        traces[device] = load_csv_trace(path, traces[device])
    return traces


@dataclass
class Experiment:
    """Live objects of one experiment."""

    config: ExperimentConfig
    workload: Workload
    fleet: SimulatedFleet
    orchestrator: SyncOrchestrator
    executor: Executor
    initial_params: Params
    spec: ModelSpec | None = None
    submodels: SubModelExchange | None = None

    @property
    def data(self) -> FederatedData:
        return self.workload.data


def _executor(config: ExperimentConfig, recipe: WorkloadRecipe, workload: Workload) -> Executor:
    if config.simulation.executor == "process":
        return ProcessPoolExecutor(recipe, config.simulation.workers)
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


def build(config: ExperimentConfig) -> Experiment:
    """Build every object of an experiment from its config.

    Raises:
        ConfigError / DataError: the config names something that does not exist.
    """
    t = config.training
    profiles = fleet_profiles(config)
    recipe_data = tuple(sorted(data_kwargs(config).items()))
    data = build_federated_data(**dict(recipe_data))
    spec = ModelSpec(config.model.name, data.input_shape, data.num_classes, config.model.width,
                     config.model.norm, config.width.scaler)
    recipe = WorkloadRecipe(spec, recipe_data, config.seed, OptimizerConfig(t.momentum, t.weight_decay))
    workload = Workload(recipe, data)
    torch.manual_seed(config.seed)
    initial = {k: v.detach().clone() for k, v in spec.build().state_dict().items()}
    costs: Callable[[float], ModelCost] = functools.partial(measure, spec)
    memory = MemoryModel(optimizer_slots=1 if t.momentum > 0 else 0)
    examples = [len(d) for d in data.train]
    submodels = SubModelExchange.for_spec(spec, config.width.indices, config.seed)
    executor = _executor(config, recipe, workload)
    fleet = SimulatedFleet(profiles=profiles, traces=fleet_traces(config, profiles),
                           num_examples=examples, costs=costs, memory=memory, executor=executor)
    o = config.orchestration
    base = FixedPlanner(batch_size=t.batch_size, local_epochs=t.local_epochs, lr=t.lr,
                        max_steps=t.max_steps, deadline_s=o.deadline_s)
    planner = _width_planner(config, base, profiles, examples, costs, memory)
    sync = SyncConfig(rounds=o.rounds, clients_per_round=o.clients_per_round,
                      over_selection=o.over_selection, deadline_s=o.deadline_s,
                      eval_every=config.evaluation.every)
    orchestrator = SyncOrchestrator(fleet=fleet, planner=planner, weighting=weighting(o.weighting),
                                    evaluator=_evaluator(workload, config.width.calibration_samples),
                                    config=sync, seed=config.seed, submodels=submodels)
    return Experiment(config, workload, fleet, orchestrator, executor, initial, spec, submodels)


@contextmanager
def built(config: ExperimentConfig) -> Iterator[Experiment]:
    """:func:`build`, closing the executor afterwards."""
    exp = build(config)
    try:
        yield exp
    finally:
        exp.executor.close()


@dataclass(frozen=True)
class RunResult:
    """What a finished run produced."""

    reports: tuple[RoundReport, ...]
    summary: dict[str, Any]
    run_dir: Path | None
    params: Params
    spec: ModelSpec | None = None


def run(config: ExperimentConfig, run_dir: Path | None = None,
        on_round: Callable[[RoundOutcome], None] | None = None) -> RunResult:
    """Run an experiment to the end; write ``run_dir`` when given.

    Args:
        config: the validated experiment.
        run_dir: directory for config, logs, summary and plots (``None``: write nothing).
        on_round: called after each round (progress display).
    """
    reports: list[RoundReport] = []
    with built(config) as exp:
        out = RunDirectory(run_dir, config.model_dump(mode="json")) if run_dir else None
        params = exp.initial_params
        for outcome in exp.orchestrator.rounds(params):
            reports.append(outcome.report)
            params = outcome.params
            if out:
                out.log_round(outcome.report, outcome.results)
            if on_round:
                on_round(outcome)
        spec, stats = exp.spec, exp.submodels.stats if exp.submodels else None
    summary = summarise(reports, config.evaluation.target_accuracy)
    if out:
        out.finish(summary, reports, name=config.name, target=config.evaluation.target_accuracy,
                   plots=config.output.plots)
        if spec is not None:
            save_model(out.path, spec, params, stats)
    return RunResult(tuple(reports), summary, run_dir, params, spec)
