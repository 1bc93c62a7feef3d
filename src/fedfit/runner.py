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
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fedfit.automode import ModeSwitch
from fedfit.config import ExperimentConfig
from fedfit.errors import ConfigError, RunStopped
from fedfit.experiment import Experiment, built
from fedfit.sources import UserSources
from fedfit.models import ModelSpec
from fedfit.orchestration.asynchronous import AsyncOrchestrator, AsyncState
from fedfit.orchestration.sync import RoundOutcome, SyncState
from fedfit.report import RunDirectory
from fedfit.report import atomic
from fedfit.report.lock import LOCK_NAME, RunLock
from fedfit.report.model_file import save_model
from fedfit.report.run_dir import OUTPUTS, finished
from fedfit.report.stream import with_stream_metrics
from fedfit.simulation import checkpoint, planner_state
from fedfit.simulation.checkpoint import Checkpoint, config_digest
from fedfit.simulation.threads import driver_threads, pinned
from fedfit.types import Params, RoundReport
from fedfit.autorun import Resolved
from fedfit.resumption import Resumption, _checkpoint, _restore, resumable
from fedfit.run_summary import finish_run

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
           on_start: OnStart | None = None, checked: Resumption | None = None) -> RunResult:
    """Continue the run in ``run_dir`` from its checkpoint, to ``rounds`` rounds in all; a run
    killed after its last checkpoint is finished (model, plots, summary) without running a round.

    Args:
        run_dir: a run directory written with ``output.checkpoint_every > 0``.
        rounds: total rounds (server versions) to reach; ``None``: the config's. More than the
            config's extends a finished run.
        on_phase: called as each phase completes (see the module docstring).
        sources: the user's model and data, as the interrupted run had them.
        on_start: called with the resolved config once the experiment is built.
        checked: :func:`~fedfit.resumption.resumable`'s answer for ``run_dir`` before the lock
            (the CLI's): checked again under the lock, reusing its ``auto`` decision.

    Raises:
        CheckpointError / ConfigError: as :func:`~fedfit.resumption.resumable`, or the directory is locked.
    """
    if not run_dir.is_dir():
        raise ConfigError(f"RUN_DIR: no such directory: {run_dir}")
    with RunLock(run_dir):
        plan = resumable(run_dir, rounds, sources, checked.resolved if checked else None)
        return _drive(plan.config, run_dir, on_round, plan.saved, on_phase, sources, on_start, plan.resolved)


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
           on_start: OnStart | None = None, resolved: Resolved | None = None) -> RunResult:
    phase = on_phase or (lambda name: None)
    every = config.output.checkpoint_every
    with (pinned(driver_threads(config.simulation.torch_threads)), built(config, sources, resolved) as exp,
          ExitStack() as stack):
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
        summary = finish_run(exp, state.params, reports, run_dir, unfinished) | {"stopped": stopped}
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


def _check_cohort(exp: Experiment) -> None:
    """Raise :class:`ConfigError` when a sync round waits for more devices than the fleet has."""
    k, n = exp.config.orchestration.clients_per_round, len(exp.fleet.device_ids())
    if exp.config.orchestration.mode == "sync" and k > n:
        raise ConfigError(f"orchestration.clients_per_round: {k} exceeds the fleet's {n} devices "
                          "(lower it or add devices under fleet.tiers)")


