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
from fedfit.orchestration.sync import RoundOutcome, SyncConfig, SyncOrchestrator
from fedfit.models.stages import stages_of
from fedfit.policy import FixedPlanner, Planner
from fedfit.policy.memory import MemoryPlanner, MemorySettings
from fedfit.report import RunDirectory, summarise
from fedfit.simulation.executors import Executor, LocalExecutor, ProcessPoolExecutor
from fedfit.simulation.fleet import SimulatedFleet
from fedfit.simulation.workload import Workload, WorkloadRecipe
from fedfit.training import OptimizerConfig, evaluate
from fedfit.training.qat import export_int, quantised_accuracy, save_int
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
    num_stages = len(stages_of(spec.build()))
    if m.split.cut is not None and not 1 <= m.split.cut < num_stages:
        raise ConfigError(f"memory.split.cut: must be in 1..{num_stages - 1} for model {spec.name}")
    return MemoryPlanner(base, settings=settings, costs=costs, memory=memory, num_stages=num_stages)


@dataclass
class Experiment:
    """Live objects of one experiment."""

    config: ExperimentConfig
    workload: Workload
    fleet: SimulatedFleet
    orchestrator: SyncOrchestrator
    executor: Executor
    initial_params: Params

    @property
    def data(self) -> FederatedData:
        return self.workload.data


def _executor(config: ExperimentConfig, recipe: WorkloadRecipe, workload: Workload) -> Executor:
    if config.simulation.executor == "process":
        return ProcessPoolExecutor(recipe, config.simulation.workers)
    return LocalExecutor(workload)


def _evaluator(workload: Workload) -> Callable[[Params], tuple[float, float]]:
    test = workload.data.global_test
    model = workload.module(workload.recipe.model.width)
    return lambda params: evaluate(model, params, test.x, test.y)


def build(config: ExperimentConfig) -> Experiment:
    """Build every object of an experiment from its config.

    Raises:
        ConfigError / DataError: the config names something that does not exist.
    """
    t = config.training
    profiles = fleet_profiles(config)
    recipe_data = tuple(sorted(data_kwargs(config).items()))
    data = build_federated_data(**dict(recipe_data))
    spec = ModelSpec(config.model.name, data.input_shape, data.num_classes, config.model.width)
    optimizer = OptimizerConfig(t.momentum, t.weight_decay, kind=t.optimizer)
    recipe = WorkloadRecipe(spec, recipe_data, config.seed, optimizer)
    workload = Workload(recipe, data)
    torch.manual_seed(config.seed)
    initial = {k: v.detach().clone() for k, v in spec.build().state_dict().items()}
    costs: Callable[[float], ModelCost] = functools.partial(measure, spec)
    executor = _executor(config, recipe, workload)
    fleet = SimulatedFleet(profiles=profiles, traces=fleet_traces(config, profiles),
                           num_examples=[len(d) for d in data.train], costs=costs,
                           memory=MemoryModel(optimizer_slots=optimizer.slots), executor=executor)
    o = config.orchestration
    planner: Planner = FixedPlanner(batch_size=t.batch_size, local_epochs=t.local_epochs, lr=t.lr,
                                    max_steps=t.max_steps, deadline_s=o.deadline_s)
    if config.memory.mode != "off":
        planner = memory_planner(config, planner, costs, MemoryModel(optimizer_slots=optimizer.slots), spec)
    sync = SyncConfig(rounds=o.rounds, clients_per_round=o.clients_per_round,
                      over_selection=o.over_selection, deadline_s=o.deadline_s,
                      eval_every=config.evaluation.every)
    orchestrator = SyncOrchestrator(fleet=fleet, planner=planner, weighting=weighting(o.weighting),
                                    evaluator=_evaluator(workload), config=sync, seed=config.seed)
    return Experiment(config, workload, fleet, orchestrator, executor, initial)


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


def _export_quantised(exp: Experiment, params: Params, run_dir: Path | None) -> dict[str, float]:
    """QAT runs: the integer model's test accuracy, and ``model_int.safetensors`` in the run directory."""
    bits = exp.config.memory.qat.bits
    test = exp.data.global_test
    accuracy = quantised_accuracy(exp.workload.module(exp.config.model.width), params, test.x, test.y, bits)
    if run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
        save_int(run_dir / "model_int.safetensors", export_int(params, bits))
    return {"int_accuracy": accuracy}


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
        int8 = _export_quantised(exp, params, run_dir) if "qat" in config.memory.techniques else {}
    summary = {**summarise(reports, config.evaluation.target_accuracy), **int8}
    if out:
        out.finish(summary, reports, name=config.name, target=config.evaluation.target_accuracy,
                   plots=config.output.plots)
    return RunResult(tuple(reports), summary, run_dir, params)
