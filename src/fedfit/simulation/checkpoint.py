"""A simulated run's checkpoint: everything needed to continue it in a new process.

One file, ``checkpoint.safetensors`` in the run directory: its tensors (content-addressed, so
the model one version sends to fifty devices is stored once) and, as one more tensor of UTF-8
bytes (``fedfit_state``), the JSON of the rest (:mod:`fedfit.simulation.codec`). The registry
and any other long run of one dataclass go as columns (:mod:`fedfit.simulation.columns`):
tensors plus small tables, so size and save time grow by tens of bytes and microseconds per
device and the safetensors header (capped at 100 MB by the library) stays a few kilobytes at
any fleet size. Format-1 files (the JSON in the header) still load. It holds the server's state (sync or async),
the fleet's tasks in flight with their starting parameters and energy spent, the sub-model
exchange's pending maps and channel statistics, elastic width's pools, the registry (devices'
reported states and task history, Oort's feedback among it), the reports so far and
how many bytes the logs held. Data, traces and initial weights are rebuilt from the config and
seed, so they are not stored.

The file is written beside the old one and renamed over it: a run killed at any moment leaves
either the previous checkpoint or the new one whole, never a torn file.

Loading trusts nothing: the state is capped at :data:`MAX_META_BYTES`, decoded with the
codec's depth cap and field type checks, every floating tensor must be finite, and no clock or
log size may be negative; :func:`check_run` checks that a run's checkpoint hangs together (as
many reports as the server's rounds or versions). Anything else is one
:class:`~fedfit.errors.CheckpointError` line.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from fedfit.aggregation import Arrival
from fedfit.devices.registry import DeviceHistory, RegistryEntry, UpdateRecord
from fedfit.errors import CheckpointError
from fedfit.report import atomic
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
FORMAT = 2
#: Largest state (the JSON of everything but tensors) a checkpoint may hold.
MAX_META_BYTES = 256 << 20
#: The tensor that holds the state's JSON as UTF-8 bytes (content keys are 32 hex digits).
STATE_KEY = "fedfit_state"

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
    ``output`` — a resume may extend a run, train on more workers and write elsewhere.

    The whole's digest, then each top-level key's (``digest|key=digest,...``), so that a mismatch
    can name what differs (:func:`config_mismatch`)."""
    relevant = {k: v for k, v in config.items() if k not in ("output", "simulation", "name")}
    relevant["orchestration"] = {k: v for k, v in relevant.get("orchestration", {}).items() if k != "rounds"}
    keys = ",".join(f"{k}={_digest(v)[:8]}" for k, v in sorted(relevant.items()))
    return f"{_digest(relevant)}|{keys}"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def config_mismatch(saved: str, current: str) -> str | None:
    """``None`` where two :func:`config_digest` values are of the same config; else what differs:
    the top-level keys, where both carry them (a checkpoint before fedfit named them carries
    only the whole's digest)."""
    if saved.split("|")[0] == current.split("|")[0]:
        return None
    if "|" not in saved:
        return "changed since the checkpoint was written"
    old, new = (dict(kv.split("=", 1) for kv in d.split("|", 1)[1].split(",") if "=" in kv) for d in (saved, current))
    differ = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    return (f"{', '.join(differ)} differ{'s' if len(differ) == 1 else ''} from the config the checkpoint was "
            "written with (edited since, or the checkpoint is another run's)")


def save(directory: Path, checkpoint: Checkpoint) -> Path:
    """Write ``checkpoint`` to ``directory/checkpoint.safetensors`` atomically; returns the path."""
    tensors: dict[str, Any] = {}
    state = json.dumps(_CODEC.encode(checkpoint, tensors), separators=(",", ":")).encode()
    tensors[STATE_KEY] = torch.frombuffer(bytearray(state), dtype=torch.uint8)
    meta = {"format": str(FORMAT)}
    path = directory / FILENAME
    atomic.write_with(path, lambda tmp: save_file(tensors, str(tmp), metadata=meta))
    return path


def load(directory: Path) -> Checkpoint:
    """The checkpoint in ``directory`` (of this format, or of format 1: the state in the header).

    Raises:
        CheckpointError: no checkpoint there, or it is damaged or of another format.
    """
    path = directory / FILENAME
    if not path.is_file():
        raise CheckpointError(f"{path}: no checkpoint (run with output.checkpoint_every > 0)")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            keys = list(f.keys())
            state = f.get_slice(STATE_KEY) if STATE_KEY in keys else None
            if state is not None and state.get_shape()[0] > MAX_META_BYTES:
                raise CheckpointError(f"{path}: state larger than {MAX_META_BYTES} bytes")
            tensors = {key: f.get_tensor(key) for key in keys}
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: unreadable checkpoint ({exc})") from exc
    text = _state_text(meta, tensors)
    if text is None:
        raise CheckpointError(f"{path}: not a fedfit checkpoint of format {FORMAT}")
    try:
        value = _decode(text, tensors)
        _check(value)
    except CheckpointError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    return value


def _state_text(meta: dict[str, str], tensors: dict[str, Any]) -> str | None:
    """The JSON state of a checkpoint (popped from ``tensors``); ``None``: not a fedfit checkpoint."""
    if meta.get("format") == "1" and "fedfit_checkpoint" in meta:
        return meta["fedfit_checkpoint"]
    state = tensors.pop(STATE_KEY, None)
    if meta.get("format") != str(FORMAT) or state is None or state.dtype != torch.uint8 or state.dim() != 1:
        return None
    try:
        return bytes(state.numpy()).decode("utf-8")
    except UnicodeDecodeError:
        return None


def _decode(text: str, tensors: dict[str, Any]) -> Checkpoint:
    if len(text) > MAX_META_BYTES:
        raise CheckpointError(f"state larger than {MAX_META_BYTES} bytes")
    for key, tensor in tensors.items():
        if tensor.is_floating_point() and not bool(tensor.isfinite().all()):
            raise CheckpointError(f"tensor {key} holds NaN or infinite values")
    try:
        data = json.loads(text)
    except RecursionError:
        raise CheckpointError("state nested too deeply") from None
    except ValueError as exc:
        raise CheckpointError(f"state is not valid JSON ({exc})") from None
    value = _CODEC.decode(data, tensors)
    if not isinstance(value, Checkpoint):
        raise CheckpointError(f"holds a {type(value).__name__}, not a checkpoint")
    return value


def check_run(directory: Path, saved: Checkpoint) -> None:
    """Raise :class:`CheckpointError` unless ``saved`` is a run's checkpoint: as many reports as
    the server has run rounds (versions), and logs that hold exactly when reports do."""
    server = saved.server
    done = server.round if isinstance(server, SyncState) else server.version
    if done != len(saved.reports):
        raise CheckpointError(f"{directory / FILENAME}: the server has run {done} rounds "
                              f"but {len(saved.reports)} reports are saved")
    if (saved.log_bytes[0] == 0) != (not saved.reports):
        raise CheckpointError(f"{directory / FILENAME}: log sizes {saved.log_bytes} do not fit "
                              f"{len(saved.reports)} rounds")


def _check(saved: Checkpoint) -> None:
    """Raise :class:`CheckpointError` where the decoded state is impossible (negative sizes or clock)."""
    server = saved.server
    if any(n < 0 for n in saved.log_bytes):
        raise CheckpointError(f"negative log sizes {saved.log_bytes}")
    if not (math.isfinite(server.now_s) and server.now_s >= 0 and server.wall_s >= 0):
        raise CheckpointError(f"server clock {server.now_s} s is negative or not finite")
    times = [r.virtual_time_s for r in saved.reports]
    if any(b < a for a, b in zip(times, times[1:], strict=False)) or (times and times[-1] > server.now_s + 1e-9):
        raise CheckpointError("report times run backwards or past the server's clock")
