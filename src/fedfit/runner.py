"""Run an experiment to the end, or resume an interrupted one: the I/O edge of a run.

``run`` builds the experiment, drives its rounds, writes the run directory (config, logs,
summary, plots, model, and a checkpoint every ``output.checkpoint_every`` rounds) and returns
the summary. ``resume`` continues a run directory from its checkpoint in a new process: the
server's state, the tasks still in flight and every stateful policy come back from the file,
data and traces are rebuilt from the config and seed, the logs are cut back to what the
checkpoint had seen, and the rounds continue exactly as the unbroken run would have — the same
events, metrics and virtual times (wall times aside).

Crash safety: a run holds an exclusive lock on its directory (:class:`~fedfit.report.lock.RunLock`)
for its whole life. Every rewritten file is replaced atomically, the final checkpoint is written
before the model, plots and ``summary.json`` (written last: it marks a finished run), so a run
killed at any moment — also after its last checkpoint, or during a resume's start — is finished
by ``resume``. ``on_phase`` names each step as it completes (``config``, ``round``,
``checkpoint``, ``model``, ``plots``, ``summary``): tests raise there to simulate a crash.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fedfit.automode import ModeSwitch
from fedfit.bounded import MAX_CONFIG_BYTES, load_yaml, read_text
from fedfit.config import ExperimentConfig, load_config, with_overrides
from fedfit.errors import CheckpointError, ConfigError, RunStopped
from fedfit.autoconfig import label_counts
from fedfit.autoconfig import resolve as resolve_auto
from fedfit.data import build_federated_data
from fedfit.experiment import Experiment, built
from fedfit.inputs import cost_inputs, data_kwargs, fleet_profiles, fleet_traces
from fedfit.sources import UserSources, model_spec, user_data
from fedfit.models import ModelSpec
from fedfit.orchestration.asynchronous import AsyncOrchestrator, AsyncState
from fedfit.orchestration.sync import RoundOutcome, SyncState
from fedfit.report import RunDirectory, local_accuracy_by_tier, summarise, worst_tier_gap
from fedfit.report import atomic
from fedfit.report.lock import LOCK_NAME, RunLock
from fedfit.report.model_file import save_model
from fedfit.report.run_dir import OUTPUTS, finished
from fedfit.security.report import security_summary
from fedfit.report.stream import with_stream_metrics
from fedfit.simulation import checkpoint, planner_state
from fedfit.simulation.checkpoint import Checkpoint, config_digest
from fedfit.simulation.threads import driver_threads, pinned
from fedfit.training import evaluate
from fedfit.training.qat import export_int, quantised_accuracy, save_int
from fedfit.types import Params, RoundReport

#: Called after each round (progress display); a checkpoint due that round is already written.
OnRound = Callable[[RoundOutcome], None]
#: Called with a phase's name each time one completes (a test hook: raise to simulate a crash).
OnPhase = Callable[[str], None]
#: Called once the experiment is built, with its config as resolved (``auto``'s choices applied:
#: an async ``auto`` run's ``orchestration.rounds`` counts its versions) — the progress bar's total.
OnStart = Callable[[ExperimentConfig], None]


@dataclass(frozen=True)
class RunResult:
    """What a finished run produced; ``stopped`` says why it ended before its last round
    (:class:`~fedfit.errors.RunStopped`), ``None`` when it ran them all."""

    reports: tuple[RoundReport, ...]
    summary: dict[str, Any]
    run_dir: Path | None
    params: Params
    spec: ModelSpec | None = None
    stopped: str | None = None


def run(config: ExperimentConfig, run_dir: Path | None = None, on_round: OnRound | None = None, *,
        force: bool = False, on_phase: OnPhase | None = None, sources: UserSources | None = None,
        on_start: OnStart | None = None) -> RunResult:
    """Run an experiment to the end; write ``run_dir`` when given.

    Args:
        config: the validated experiment.
        run_dir: directory for config, logs, checkpoint, summary and plots (``None``: write nothing).
        on_round: called after each round.
        force: replace a run already in ``run_dir`` (its files are removed first).
        on_phase: called as each phase completes (see the module docstring).
        sources: the user's model and data as Python objects (``None``: the config's).
        on_start: called with the resolved config once the experiment is built.

    Raises:
        ConfigError: ``run_dir`` is locked by another process, cannot be written, or already
            holds a run and ``force`` is not set.
    """
    if run_dir is None:
        return _drive(config, None, on_round, None, on_phase, sources, on_start)
    existed = run_dir.exists()
    try:
        with RunLock(run_dir):
            _claim(run_dir, force)
            return _drive(config, run_dir, on_round, None, on_phase, sources, on_start)
    except BaseException:
        if not existed:  # failed before writing anything: leave no empty directory behind
            _remove_if_unused(run_dir)
        raise


def resume(run_dir: Path, rounds: int | None = None, on_round: OnRound | None = None, *,
           on_phase: OnPhase | None = None, sources: UserSources | None = None,
           on_start: OnStart | None = None) -> RunResult:
    """Continue the run in ``run_dir`` from its checkpoint, to ``rounds`` rounds in all; a run
    killed after its last checkpoint is finished (model, plots, summary) without running a round.

    Args:
        run_dir: a run directory written with ``output.checkpoint_every > 0``.
        rounds: total rounds (server versions) to reach; ``None``: the config's. More than the
            config's extends a finished run.
        on_phase: called as each phase completes (see the module docstring).
        sources: the user's model and data, as the interrupted run had them.
        on_start: called with the resolved config once the experiment is built.

    Raises:
        CheckpointError / ConfigError: as :func:`resumable`, or the directory is locked.
    """
    if not run_dir.is_dir():
        raise ConfigError(f"RUN_DIR: no such directory: {run_dir}")
    with RunLock(run_dir):
        config, saved = resumable(run_dir, rounds, sources)
        return _drive(config, run_dir, on_round, saved, on_phase, sources, on_start)


def resumable(run_dir: Path, rounds: int | None = None,
              sources: UserSources | None = None) -> tuple[ExperimentConfig, Checkpoint]:
    """The config a resume of ``run_dir`` would run, and the checkpoint it would start from.

    Reads only: nothing in ``run_dir`` changes. An ``auto`` run's rounds are compared as
    ``auto`` resolves them (an async run applies ``⌈R·k / b⌉`` versions for R rounds): its
    decision is rebuilt from the same enrolment reports, as the resume will (``sources``: the
    user's model and data, when the run had them).

    Raises:
        CheckpointError: no usable checkpoint, or ``config.yaml`` no longer matches it.
        ConfigError: ``config.yaml`` is missing or invalid, or the run is finished with ``rounds`` rounds.
    """
    if not run_dir.is_dir():
        raise ConfigError(f"RUN_DIR: no such directory: {run_dir}")
    path = run_dir / "config.yaml"
    config = load_config(path)
    if rounds is not None:
        config = with_overrides(config, {"orchestration.rounds": rounds})
    saved = checkpoint.load(run_dir)
    checkpoint.check_run(run_dir, saved)
    # The file as written, not as parsed: a key a later fedfit adds, with its default, is no edit.
    if saved.config_digest != config_digest(load_yaml(read_text(path, MAX_CONFIG_BYTES, "config"), str(path)) or {}):
        raise CheckpointError(f"{path}: changed since the checkpoint was written")
    total = resolved_rounds(config, sources)
    if saved.rounds_done > total or (saved.rounds_done == total and finished(run_dir)):
        raise ConfigError(f"orchestration.rounds: the run already has {saved.rounds_done} rounds; "
                          "ask for more (fedfit resume --rounds N)")
    return config, saved


def resolved_rounds(config: ExperimentConfig, sources: UserSources | None = None) -> int:
    """The rounds (server versions) ``config`` runs once built: ``orchestration.rounds``, or for
    an ``auto`` run the budget its decision resolves (the same as :func:`~fedfit.experiment.build`'s,
    from the fleet's reports at time 0; the model's measurement is cached for the build after)."""
    if not config.auto.enabled:
        return config.orchestration.rounds
    profiles = fleet_profiles(config)
    own = user_data(config, sources)
    data = own if own is not None else build_federated_data(**data_kwargs(config))
    _, costs, memory = cost_inputs(config, model_spec(config, data, sources))
    states = [trace.state_at(0.0) for trace in fleet_traces(config, profiles)]
    resolved, _ = resolve_auto(config, profiles, states, [len(d) for d in data.train], costs, memory,
                               label_counts(data))
    return resolved.orchestration.rounds


def _claim(run_dir: Path, force: bool) -> None:
    """Refuse a directory holding a run unless ``force``; with ``force``, remove that run's files."""
    present = [name for name in OUTPUTS if (run_dir / name).exists()]
    if present and not force:
        state = "finished" if finished(run_dir) else "unfinished"
        raise ConfigError(f"--out: {run_dir} already holds a{'n' if state[0] == 'u' else ''} {state} run "
                          "(use a fresh directory, fedfit resume, or --force to replace it)")
    for name in present:
        (run_dir / name).unlink()
    atomic.fsync_dir(run_dir)


def _remove_if_unused(run_dir: Path) -> None:
    if run_dir.is_dir() and [p.name for p in run_dir.iterdir()] == [LOCK_NAME]:
        (run_dir / LOCK_NAME).unlink()
        run_dir.rmdir()


def _drive(config: ExperimentConfig, run_dir: Path | None, on_round: OnRound | None,
           saved: Checkpoint | None, on_phase: OnPhase | None, sources: UserSources | None = None,
           on_start: OnStart | None = None) -> RunResult:
    phase = on_phase or (lambda name: None)
    every = config.output.checkpoint_every
    with pinned(driver_threads(config.simulation.torch_threads)), built(config, sources) as exp, ExitStack() as stack:
        total = exp.config.orchestration.rounds  # as resolved: auto's async budget may run more versions
        if on_start:
            on_start(exp.config)
        _check_cohort(exp)
        state = _restore(exp, saved) if saved else _initial_state(exp)
        if isinstance(exp.orchestrator, ModeSwitch):
            exp.orchestrator.resume_from(list(saved.reports) if saved else [])
        if saved and run_dir:
            planner_state.load(run_dir, exp.orchestrator.observer, saved.rounds_done, saved.config_digest)
        reports = list(saved.reports) if saved else []
        out = stack.enter_context(RunDirectory(run_dir, config.model_dump(mode="json"),
                                               saved.log_bytes if saved else None)) if run_dir else None
        if out and reports and len(reports) < total:
            out.reopen_for_rounds()  # an extended run is unfinished until its new summary
        phase("config")
        digest = config_digest(yaml.safe_load((out.path / "config.yaml").read_text())) if out else ""
        stopped, unfinished = None, None
        try:
            for outcome, state in _rounds(exp, state, total - len(reports)):
                reports.append(outcome.report)
                if out:
                    out.log_round(outcome.report, outcome.results)
                    phase("round")
                    if every and (len(reports) % every == 0 or len(reports) == _last(exp, total)):
                        planner_state.save(out.path, exp.orchestrator.observer, len(reports), digest)
                        checkpoint.save(out.path, _checkpoint(exp, digest, state, reports, out.log_bytes()))
                        planner_state.prune(out.path, len(reports))
                        phase("checkpoint")
                if on_round:
                    on_round(outcome)
        except RunStopped as stop:  # no progress: keep what was done, write everything, say why
            stopped, unfinished = str(stop), stop.unfinished
            if out:
                out.log_events(stop.results)
        exp.fleet.cancel_pending()
        summary = _finish(exp, state.params, reports, run_dir, unfinished) | {"stopped": stopped}
        if out:
            _write_results(exp, out, state.params, reports, phase)
            out.write_summary(summary)
            phase("summary")
    return RunResult(tuple(reports), summary, run_dir, state.params, exp.spec, stopped)


def _write_results(exp: Experiment, out: RunDirectory, params: Params, reports: list[RoundReport],
                   phase: OnPhase) -> None:
    """Model files and plots, each atomically (``summary.json`` follows: it marks the end)."""
    if exp.spec is not None:
        save_model(out.path, exp.spec, params, exp.submodels.stats if exp.submodels else None)
        phase("model")
    config = exp.config
    if config.output.plots:
        out.plot(reports, name=config.name, target=config.evaluation.target_accuracy)
        phase("plots")


def _rounds(exp: Experiment, state: SyncState | AsyncState,
            count: int) -> Iterator[tuple[RoundOutcome, SyncState | AsyncState]]:
    rounds: Iterator[tuple[RoundOutcome, SyncState | AsyncState]]
    if isinstance(exp.orchestrator, ModeSwitch):
        rounds = exp.orchestrator.run(state, count)
    elif isinstance(exp.orchestrator, AsyncOrchestrator):
        assert isinstance(state, AsyncState)
        rounds = exp.orchestrator.run(state, count)
    else:
        assert isinstance(state, SyncState)
        rounds = exp.orchestrator.run(state, count)
    for outcome, after in rounds:
        if exp.stream is not None:
            outcome = dataclasses.replace(outcome, report=with_stream_metrics(outcome.report, outcome.results,
                                                                             exp.stream))
        yield outcome, after


def _last(exp: Experiment, total: int) -> int:
    """The run's last round: ``total``, or fewer when ``auto`` switched to sync rounds midway."""
    return exp.orchestrator.total() if isinstance(exp.orchestrator, ModeSwitch) else total


def _initial_state(exp: Experiment) -> SyncState | AsyncState:
    if isinstance(exp.orchestrator, (AsyncOrchestrator, ModeSwitch)):
        return AsyncState(exp.initial_params)
    return SyncState(exp.initial_params)


def _checkpoint(exp: Experiment, digest: str, state: SyncState | AsyncState,
                reports: list[RoundReport], log_bytes: tuple[int, int]) -> Checkpoint:
    pools = {r: list(w) for r, w in exp.width.pools.items()} if exp.width else {}
    exchange = exp.submodels.state() if exp.submodels else None
    registry = exp.registry.entries() if exp.registry else ()
    return Checkpoint(digest, state, exp.fleet.state(), exchange, pools, registry, tuple(reports),
                      log_bytes)


def _restore(exp: Experiment, saved: Checkpoint) -> SyncState | AsyncState:
    """Put the checkpoint's state back into the freshly built experiment; returns the server state."""
    expected: tuple[type, ...] = (AsyncState,) if isinstance(exp.orchestrator, AsyncOrchestrator) else (SyncState,)
    if isinstance(exp.orchestrator, ModeSwitch):  # async until the loss stalls, sync after
        expected = (AsyncState, SyncState)
    if not isinstance(saved.server, expected):
        raise CheckpointError(f"checkpoint holds a {type(saved.server).__name__}, "
                              f"the config runs {expected[0].__name__}")
    _check_model(exp.initial_params, saved.server.params)
    try:
        exp.fleet.restore(saved.fleet)
        if exp.submodels is not None and saved.exchange is not None:
            exp.submodels.restore(saved.exchange)
        if exp.width is not None:
            exp.width.pools = {r: list(w) for r, w in saved.width_pools.items()}
        if exp.registry is not None:
            exp.registry.restore(saved.registry)
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        raise CheckpointError(f"checkpoint does not fit the config's fleet ({str(exc)[:120]})") from None
    return saved.server


def _check_cohort(exp: Experiment) -> None:
    """Raise :class:`ConfigError` when a sync round waits for more devices than the fleet has."""
    k, n = exp.config.orchestration.clients_per_round, len(exp.fleet.device_ids())
    if exp.config.orchestration.mode == "sync" and k > n:
        raise ConfigError(f"orchestration.clients_per_round: {k} exceeds the fleet's {n} devices "
                          "(lower it or add devices under fleet.tiers)")


def _check_model(expected: Params, got: Params) -> None:
    """Raise :class:`CheckpointError` unless ``got`` has ``expected``'s names, shapes and dtypes."""
    if set(got) != set(expected):
        missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
        raise CheckpointError(f"checkpoint model does not fit the config's (missing {missing[:3]}, extra {extra[:3]})")
    for name, tensor in expected.items():
        if got[name].shape != tensor.shape or got[name].dtype != tensor.dtype:
            raise CheckpointError(f"checkpoint model {name}: {got[name].dtype} {tuple(got[name].shape)}, "
                                  f"the config's is {tensor.dtype} {tuple(tensor.shape)}")


def _finish(exp: Experiment, params: Params, reports: list[RoundReport], run_dir: Path | None,
            unfinished: RoundReport | None = None) -> dict[str, Any]:
    """The summary: round totals, each tier's local accuracy, and the integer model's accuracy for QAT."""
    config = exp.config
    tiers = [exp.fleet.profile(d).tier for d in exp.fleet.device_ids()]
    summary = summarise(reports, config.evaluation.target_accuracy, tiers=tiers, unfinished=unfinished,
                        online_tiers=_online_tiers(exp, reports))
    local = _local_accuracy(exp, params)
    int8 = _export_quantised(exp, params, run_dir) if "qat" in config.memory.techniques else {}
    auto = {"auto": list(exp.auto.reasons)} if exp.auto else {}
    if exp.reviser is not None:
        auto["auto_revisions"] = list(exp.reviser.log)
    if isinstance(exp.orchestrator, ModeSwitch):
        auto["auto_switch"] = list(exp.orchestrator.log)
    security = security_summary(exp, params, len(reports))
    return summary | {"local_accuracy_by_tier": local, "worst_tier_gap": worst_tier_gap(local), **int8, **auto,
                      **security, "tier_catalogue": config.fleet.catalogue}


def _online_tiers(exp: Experiment, reports: Sequence[RoundReport]) -> set[str]:
    """Tiers with a device online at the run's start or at the end of a round (aggregation): the
    times a cohort is invited (async refills in between are not sampled)."""
    starts = [0.0, *(r.virtual_time_s for r in reports)]
    return {exp.fleet.profile(d).tier for d in exp.fleet.device_ids()
            if any(exp.fleet.snapshot(d, t).online for t in starts)}


def _local_accuracy(exp: Experiment, params: Params) -> dict[str, float]:
    """The final model's accuracy on each tier's own local test data."""
    model = exp.workload.module(1.0)  # widths are relative to the master
    tiers = [exp.fleet.profile(d).tier for d in exp.fleet.device_ids()]
    return local_accuracy_by_tier(tiers, exp.data.test, lambda x, y: evaluate(model, params, x, y))


def _export_quantised(exp: Experiment, params: Params, run_dir: Path | None) -> dict[str, float]:
    """QAT runs: the integer model's test accuracy, and ``model_int.safetensors`` in the run directory."""
    bits = exp.config.memory.qat.bits
    test = exp.data.global_test
    accuracy = quantised_accuracy(exp.workload.module(1.0), params, test.x, test.y, bits)
    if run_dir is not None:
        atomic.write_with(run_dir / "model_int.safetensors", lambda p: save_int(p, export_int(params, bits)))
    return {"int_accuracy": accuracy}
