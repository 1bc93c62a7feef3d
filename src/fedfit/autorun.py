"""An ``auto`` run's assembly: auto's decision, resolved once per run from the fleet's reports
at time 0, and the stall switch's synchronous orchestrator beside an async run's.

:func:`resolve` decides and :func:`fedfit.experiment.build` wires the decision (:func:`driver`).
A resume resolves before it builds (:func:`resolve_run`: its checkpoint is compared with the
rounds auto resolves) and hands the same :class:`Resolved` to the build, so the decision, the
data and the traces are built once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fedfit.autoconfig import label_counts
from fedfit.autoconfig import resolve as resolve_auto
from fedfit.automode import ModeSwitch
from fedfit.autorevise import AutoReviser, auto_reviser
from fedfit.config import ExperimentConfig
from fedfit.devices import DeviceTrace, Registry
from fedfit.devices.lazy_trace import LazyTrace
from fedfit.inputs import RunInputs, fleet_traces, run_inputs
from fedfit.orchestration.asynchronous import AsyncOrchestrator
from fedfit.orchestration.contract import Fleet
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.orchestration.sync import SyncOrchestrator
from fedfit.orchestrator_wiring import orchestrate
from fedfit.planner_stack import dynamic_planner
from fedfit.policy.auto import AutoDecision
from fedfit.policy.auto_switch import window as stall_window
from fedfit.simulation.workload import Workload
from fedfit.sources import UserSources
from fedfit.types import DeviceState, Params


@dataclass(frozen=True)
class Resolved:
    """A config as ``auto`` resolves it, and what the decision was made from.

    Attributes:
        asked: the config as written.
        config: ``asked`` with auto's decision applied (``asked`` when auto is off).
        decision: auto's decision (``None``: auto is off).
        inputs: the run's profiles, data and costs.
        traces: the fleet's traces.
        states: each device's enrolment report, its state at time 0 (empty when auto is off).
        labels: each device's count per class (``None`` when auto is off).
    """

    asked: ExperimentConfig
    config: ExperimentConfig
    decision: AutoDecision | None
    inputs: RunInputs
    traces: Sequence[DeviceTrace | LazyTrace]
    states: list[DeviceState]
    labels: list[list[int]] | None


def resolve(config: ExperimentConfig, inputs: RunInputs) -> Resolved:
    """``config``'s traces, and auto's decision from the reports they give at time 0."""
    traces = inputs.traces.result() if inputs.traces is not None else fleet_traces(config, inputs.profiles)
    on = config.auto.enabled
    states = [trace.state_at(0.0) for trace in traces] if on else []
    labels = label_counts(inputs.data) if on else None
    chosen, decision = resolve_auto(config, inputs.profiles, states, inputs.num_examples, inputs.costs,
                                    inputs.memory, labels)
    return Resolved(config, chosen, decision, inputs, traces, states, labels)


def resolve_run(config: ExperimentConfig, sources: UserSources | None = None) -> Resolved | None:
    """Auto's decision as :func:`~fedfit.experiment.build` resolves it, before building (a
    resume's check); ``None`` when auto is off: nothing to resolve, the rounds are the config's."""
    return resolve(config, run_inputs(config, sources)) if config.auto.enabled else None


def driver(resolved: Resolved, orchestrator: SyncOrchestrator | AsyncOrchestrator, fleet: Fleet,
           workload: Workload, initial: Params, submodels: SubModelExchange,
           sizes: Callable[[float], list[int]], registry: Registry,
           ) -> tuple[SyncOrchestrator | AsyncOrchestrator | ModeSwitch, AutoReviser | None]:
    """The orchestrator a run drives and auto's reviser: a sync run's own; an async ``auto`` run
    with ``auto.switch_on_stall`` is a :class:`ModeSwitch` to a sync orchestrator over the same
    fleet and registry, decided for sync rounds from the same reports."""
    config, auto, inputs = resolved.config, resolved.decision, resolved.inputs
    reviser = auto_reviser(config, auto)
    if isinstance(orchestrator, SyncOrchestrator):
        orchestrator.reviser = reviser
        return orchestrator, reviser
    if auto is None or not config.auto.switch_on_stall:
        return orchestrator, reviser
    costs, memory, num_examples = inputs.costs, inputs.memory, inputs.num_examples
    sync_config, sync_auto = resolve_auto(resolved.asked, inputs.profiles, resolved.states, num_examples, costs,
                                          memory, resolved.labels, mode="sync")
    sync, _, _ = orchestrate(
        sync_config, fleet, workload, spec=inputs.spec, costs=costs, memory=memory, num_examples=num_examples,
        profiles=inputs.profiles, initial=initial, dynamic=dynamic_planner(sync_config, costs, memory, num_examples),
        submodels=submodels, sizes=sizes, registry=registry)
    assert isinstance(sync, SyncOrchestrator) and sync_auto is not None
    reviser = sync.reviser = auto_reviser(sync_config, sync_auto)
    trainable = sum(1 for t in auto.task_times if math.isfinite(t))
    window = stall_window(trainable, auto.buffer_size)
    return ModeSwitch(orchestrator, sync, window, config.orchestration.rounds), reviser
