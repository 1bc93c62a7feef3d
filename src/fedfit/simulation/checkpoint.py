"""A simulated run's checkpoint: everything needed to continue it in a new process.

One file, ``checkpoint.safetensors`` in the run directory: its tensors (content-addressed, so
the model one version sends to fifty devices is stored once) and, in the file's metadata, the
JSON of the rest (:mod:`fedfit.simulation.codec`). It holds the server's state (sync or async),
the fleet's tasks in flight with their starting parameters and energy spent, the sub-model
exchange's pending maps and channel statistics, elastic width's pools, the registry (devices'
reported states and task history, Oort's feedback among it), the reports so far and
how many bytes the logs held. Data, traces and initial weights are rebuilt from the config and
seed, so they are not stored.

The file is written beside the old one and renamed over it: a run killed at any moment leaves
either the previous checkpoint or the new one whole, never a torn file.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from fedfit.aggregation import Arrival
from fedfit.devices.registry import DeviceHistory, RegistryEntry, UpdateRecord
from fedfit.errors import CheckpointError
from fedfit.models.channel_stats import ChannelStats
from fedfit.models.coordinates import AxisRef, CoordinateMap, WidthGroup
from fedfit.orchestration.asynchronous import AsyncState
from fedfit.orchestration.submodels import ExchangeState
from fedfit.orchestration.sync import SyncState
from fedfit.simulation.codec import Codec
from fedfit.simulation.fleet import FleetState, PendingTask
from fedfit.simulation.workload import TrainTask
from fedfit.types import (
    BatchRule, DeviceProfile, DeviceState, Failure, FailureCause, Link, RoundReport, TaskCost, TaskResult,
    Techniques, Thermal, TrainPlan, UtilisationCurve, Update,
)

FILENAME = "checkpoint.safetensors"
FORMAT = 1

@dataclass(frozen=True)
class Checkpoint:
    """A run between two rounds (versions, in async mode).

    Attributes:
        config_digest: :func:`config_digest` of the run directory's ``config.yaml`` as written
            (a resume must find it unedited).
        server: the orchestrator's state.
        fleet: the simulated fleet's state (tasks in flight, energy spent).
        exchange: the sub-model exchange's state.
        width_pools: elastic width's per-round pools of capability widths.
        registry: the server's registry (reported states, task history, Oort's feedback).
        reports: every round's report so far.
        log_bytes: sizes of ``metrics.jsonl`` and ``events.jsonl`` when it was taken.
    """

    config_digest: str
    server: SyncState | AsyncState
    fleet: FleetState
    exchange: ExchangeState | None
    width_pools: dict[int, list[float]]
    registry: tuple[RegistryEntry, ...]
    reports: tuple[RoundReport, ...]
    log_bytes: tuple[int, int]

    @property
    def rounds_done(self) -> int:
        """Rounds (server versions) completed."""
        return len(self.reports)


_CODEC = Codec([
    Checkpoint, SyncState, AsyncState, FleetState, PendingTask, TrainTask, ExchangeState, ChannelStats,
    CoordinateMap, WidthGroup, AxisRef, Arrival, TaskResult, TrainPlan, Techniques, BatchRule, Update, Failure,
    FailureCause, TaskCost, RoundReport, RegistryEntry, DeviceProfile, UtilisationCurve, Link, DeviceState, Thermal,
    DeviceHistory, UpdateRecord,
])


def config_digest(config: dict[str, Any]) -> str:
    """A digest of what decides a run's trace: a config mapping (``config.yaml`` as loaded)
    without the round count, the ``simulation`` section (executors never change results) and
    ``output`` — a resume may extend a run, train on more workers and write elsewhere."""
    relevant = {k: v for k, v in config.items() if k not in ("output", "simulation", "name")}
    relevant["orchestration"] = {k: v for k, v in relevant.get("orchestration", {}).items() if k != "rounds"}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]


def save(directory: Path, checkpoint: Checkpoint) -> Path:
    """Write ``checkpoint`` to ``directory/checkpoint.safetensors`` atomically; returns the path."""
    tensors: dict[str, Any] = {}
    state = _CODEC.encode(checkpoint, tensors)
    meta = {"fedfit_checkpoint": json.dumps(state), "format": str(FORMAT)}
    path, tmp = directory / FILENAME, directory / f".{FILENAME}.tmp"
    save_file(tensors, str(tmp), metadata=meta)
    with tmp.open("rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def load(directory: Path) -> Checkpoint:
    """The checkpoint in ``directory``.

    Raises:
        CheckpointError: no checkpoint there, or it is damaged or of another format.
    """
    path = directory / FILENAME
    if not path.is_file():
        raise CheckpointError(f"{path}: no checkpoint (run with output.checkpoint_every > 0)")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            tensors = {key: f.get_tensor(key) for key in f.keys()}
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: unreadable checkpoint ({exc})") from exc
    if meta.get("format") != str(FORMAT) or "fedfit_checkpoint" not in meta:
        raise CheckpointError(f"{path}: not a fedfit checkpoint of format {FORMAT}")
    value = _CODEC.decode(json.loads(meta["fedfit_checkpoint"]), tensors)
    if not isinstance(value, Checkpoint):
        raise CheckpointError(f"{path}: holds a {type(value).__name__}, not a checkpoint")
    return value
