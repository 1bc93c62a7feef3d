"""A run's checkpoint as a resume sees it: whether a run directory can be resumed, from which
checkpoint and with which config (:func:`resumable`), and the live experiment's state saved
into a checkpoint and put back from one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fedfit.autorun import Resolved, resolve_run
from fedfit.automode import ModeSwitch
from fedfit.bounded import MAX_CONFIG_BYTES, load_yaml, read_text
from fedfit.config import ExperimentConfig, load_config, with_overrides
from fedfit.errors import CheckpointError, ConfigError
from fedfit.experiment import Experiment
from fedfit.sources import UserSources
from fedfit.orchestration.asynchronous import AsyncOrchestrator, AsyncState
from fedfit.orchestration.sync import SyncState
from fedfit.report.run_dir import finished
from fedfit.simulation import checkpoint
from fedfit.simulation.checkpoint import Checkpoint, config_digest, config_mismatch
from fedfit.types import Params, RoundReport


@dataclass(frozen=True)
class Resumption:
    """What a resume of a run directory starts from.

    Attributes:
        config: the config as written (``rounds`` applied).
        saved: the checkpoint.
        resolved: ``config`` as ``auto`` resolves it, with the data and traces it was resolved
            from (``None``: auto is off); the resumed run is built from it.
    """

    config: ExperimentConfig
    saved: Checkpoint
    resolved: Resolved | None

    @property
    def total(self) -> int:
        """The rounds (server versions) the resumed run reaches: an async ``auto`` run's versions."""
        return (self.resolved.config if self.resolved else self.config).orchestration.rounds


def resumable(run_dir: Path, rounds: int | None = None, sources: UserSources | None = None,
              resolved: Resolved | None = None) -> Resumption:
    """The config a resume of ``run_dir`` would run, the checkpoint it would start from and auto's
    decision for it.

    Reads only: nothing in ``run_dir`` changes. An ``auto`` run's rounds are compared as
    ``auto`` resolves them (an async run applies ``⌈R·k / b⌉`` versions for R rounds): its
    decision is rebuilt from the same enrolment reports (``sources``: the user's model and data,
    when the run had them), unless ``resolved``, an earlier check's, is for the same config.

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
    mismatch = config_mismatch(saved.config_digest,
                               config_digest(load_yaml(read_text(path, MAX_CONFIG_BYTES, "config"), str(path)) or {}))
    if mismatch is not None:
        raise CheckpointError(f"{path}: {mismatch}")
    if resolved is None or resolved.asked != config:
        resolved = resolve_run(config, sources)
    plan = Resumption(config, saved, resolved)
    if saved.rounds_done > plan.total or (saved.rounds_done == plan.total and finished(run_dir)):
        raise ConfigError(f"orchestration.rounds: the run already has {saved.rounds_done} rounds; "
                          "ask for more (fedfit resume --rounds N)")
    return plan


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


def _check_model(expected: Params, got: Params) -> None:
    """Raise :class:`CheckpointError` unless ``got`` has ``expected``'s names, shapes and dtypes."""
    if set(got) != set(expected):
        missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
        raise CheckpointError(f"checkpoint model does not fit the config's (missing {missing[:3]}, extra {extra[:3]})")
    for name, tensor in expected.items():
        if got[name].shape != tensor.shape or got[name].dtype != tensor.dtype:
            raise CheckpointError(f"checkpoint model {name}: {got[name].dtype} {tuple(got[name].shape)}, "
                                  f"the config's is {tensor.dtype} {tuple(tensor.shape)}")
