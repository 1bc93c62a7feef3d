"""Run an experiment to the end, or resume an interrupted one: the I/O edge of a run.

``run`` builds the experiment, drives its rounds, writes the run directory (config, logs,
summary, plots, model, and a checkpoint every ``output.checkpoint_every`` rounds) and returns
the summary. ``resume`` continues a run directory from its checkpoint in a new process: the
server's state, the tasks still in flight and every stateful policy come back from the file,
data and traces are rebuilt from the config and seed, the logs are cut back to what the
checkpoint had seen, and the rounds continue exactly as the unbroken run would have — the same
events, metrics and virtual times (wall times aside).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fedfit.config import ExperimentConfig, load_config, with_overrides
from fedfit.errors import CheckpointError, ConfigError
from fedfit.experiment import Experiment, built
from fedfit.sources import UserSources
from fedfit.models import ModelSpec
from fedfit.orchestration.asynchronous import AsyncOrchestrator, AsyncState
from fedfit.orchestration.sync import RoundOutcome, SyncState
from fedfit.report import RunDirectory, local_accuracy_by_tier, summarise, worst_tier_gap
from fedfit.report.model_file import save_model
from fedfit.simulation import checkpoint
from fedfit.simulation.checkpoint import Checkpoint, config_digest
from fedfit.training import evaluate
from fedfit.training.qat import export_int, quantised_accuracy, save_int
from fedfit.types import Params, RoundReport

#: Called after each round (progress display); a checkpoint due that round is already written.
OnRound = Callable[[RoundOutcome], None]


@dataclass(frozen=True)
class RunResult:
    """What a finished run produced."""

    reports: tuple[RoundReport, ...]
    summary: dict[str, Any]
    run_dir: Path | None
    params: Params
    spec: ModelSpec | None = None


def run(config: ExperimentConfig, run_dir: Path | None = None, on_round: OnRound | None = None,
        sources: UserSources | None = None) -> RunResult:
    """Run an experiment to the end; write ``run_dir`` when given.

    Args:
        config: the validated experiment.
        run_dir: directory for config, logs, checkpoint, summary and plots (``None``: write nothing).
        on_round: called after each round.
        sources: the user's model and data as Python objects (``None``: the config's).
    """
    return _drive(config, run_dir, on_round, None, sources)


def resume(run_dir: Path, rounds: int | None = None, on_round: OnRound | None = None,
           sources: UserSources | None = None) -> RunResult:
    """Continue the run in ``run_dir`` from its checkpoint, to ``rounds`` rounds in all.

    Args:
        run_dir: a run directory written with ``output.checkpoint_every > 0``.
        rounds: total rounds (server versions) to reach; ``None``: the config's. More than the
            config's extends a finished run.
        sources: the user's model and data, as the interrupted run had them.

    Raises:
        CheckpointError / ConfigError: as :func:`resumable`.
    """
    config, saved = resumable(run_dir, rounds)
    return _drive(config, run_dir, on_round, saved, sources)


def resumable(run_dir: Path, rounds: int | None = None) -> tuple[ExperimentConfig, Checkpoint]:
    """The config a resume of ``run_dir`` would run, and the checkpoint it would start from.

    Raises:
        CheckpointError: no usable checkpoint, or ``config.yaml`` no longer matches it.
        ConfigError: ``config.yaml`` is missing or invalid, or the run already has ``rounds`` rounds.
    """
    path = run_dir / "config.yaml"
    config = load_config(path)
    if rounds is not None:
        config = with_overrides(config, {"orchestration.rounds": rounds})
    saved = checkpoint.load(run_dir)
    # The file as written, not as parsed: a key a later fedfit adds, with its default, is no edit.
    if saved.config_digest != config_digest(yaml.safe_load(path.read_text())):
        raise CheckpointError(f"{path}: changed since the checkpoint was written")
    if saved.rounds_done >= config.orchestration.rounds:
        raise ConfigError(f"orchestration.rounds: the run already has {saved.rounds_done} rounds; "
                          "ask for more (fedfit resume --rounds N)")
    return config, saved


def _drive(config: ExperimentConfig, run_dir: Path | None, on_round: OnRound | None,
           saved: Checkpoint | None, sources: UserSources | None = None) -> RunResult:
    resolved = config.model_dump(mode="json")
    every, total = config.output.checkpoint_every, config.orchestration.rounds
    with built(config, sources) as exp, ExitStack() as stack:
        state = _restore(exp, saved) if saved else _initial_state(exp)
        reports = list(saved.reports) if saved else []
        out = stack.enter_context(RunDirectory(run_dir, resolved, saved.log_bytes if saved else None)) \
            if run_dir else None
        digest = config_digest(yaml.safe_load((out.path / "config.yaml").read_text())) if out else ""
        for outcome, state in _rounds(exp, state, total - len(reports)):
            reports.append(outcome.report)
            if out:
                out.log_round(outcome.report, outcome.results)
                if every and (len(reports) % every == 0 or len(reports) == total):
                    checkpoint.save(out.path, _checkpoint(exp, digest, state, reports, out.log_bytes()))
            if on_round:
                on_round(outcome)
        exp.fleet.cancel_pending()
        summary = _finish(exp, state.params, reports, run_dir)
        if out:
            out.finish(summary, reports, name=config.name, target=config.evaluation.target_accuracy,
                       plots=config.output.plots)
            if exp.spec is not None:
                save_model(out.path, exp.spec, state.params, exp.submodels.stats if exp.submodels else None)
    return RunResult(tuple(reports), summary, run_dir, state.params, exp.spec)


def _rounds(exp: Experiment, state: SyncState | AsyncState,
            count: int) -> Iterator[tuple[RoundOutcome, SyncState | AsyncState]]:
    if isinstance(exp.orchestrator, AsyncOrchestrator):
        assert isinstance(state, AsyncState)
        yield from exp.orchestrator.run(state, count)
    else:
        assert isinstance(state, SyncState)
        yield from exp.orchestrator.run(state, count)


def _initial_state(exp: Experiment) -> SyncState | AsyncState:
    if isinstance(exp.orchestrator, AsyncOrchestrator):
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
    expected = AsyncState if isinstance(exp.orchestrator, AsyncOrchestrator) else SyncState
    if not isinstance(saved.server, expected):
        raise CheckpointError(f"checkpoint holds a {type(saved.server).__name__}, the config runs {expected.__name__}")
    exp.fleet.restore(saved.fleet)
    if exp.submodels is not None and saved.exchange is not None:
        exp.submodels.restore(saved.exchange)
    if exp.width is not None:
        exp.width.pools = {r: list(w) for r, w in saved.width_pools.items()}
    if exp.registry is not None:
        exp.registry.restore(saved.registry)
    return saved.server


def _finish(exp: Experiment, params: Params, reports: list[RoundReport], run_dir: Path | None) -> dict[str, Any]:
    """The summary: round totals, each tier's local accuracy, and the integer model's accuracy for QAT."""
    config = exp.config
    summary = summarise(reports, config.evaluation.target_accuracy)
    local = _local_accuracy(exp, params)
    int8 = _export_quantised(exp, params, run_dir) if "qat" in config.memory.techniques else {}
    return summary | {"local_accuracy_by_tier": local, "worst_tier_gap": worst_tier_gap(local), **int8}


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
        run_dir.mkdir(parents=True, exist_ok=True)
        save_int(run_dir / "model_int.safetensors", export_int(params, bits))
    return {"int_accuracy": accuracy}
