"""The DYNAMITE planner's state beside a run's checkpoint (``dynamite-<rounds>.safetensors``).

The planner learns from the run (estimates, the drift factor, measured speeds, spent budget):
a resumed run must continue from what it had learned, not from the prior. Its state is a
:class:`~fedfit.policy.dynamite.snapshot.PlannerSnapshot`, saved with the checkpoint's codec
(tensors by content, the rest as JSON, only allow-listed types on load) in a file of its own,
named by the rounds done: it is written *before* the checkpoint of those rounds and the older
ones removed *after* it, so whichever checkpoint a killed run left has its planner file.
The file also holds the checkpoint's config digest; a file of another run is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from fedfit.errors import CheckpointError
from fedfit.policy.dynamite.calibrate import Calibration, RoundLoss
from fedfit.policy.dynamite.estimate import EstimatorState, RoundObservation
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.policy.dynamite.search import Assignment
from fedfit.policy.dynamite.snapshot import PlannerSnapshot, restore, snapshot
from fedfit.report import atomic
from fedfit.simulation.codec import Codec
from fedfit.types import DeviceState, Link, Thermal

STATE_KEY = "fedfit_dynamite"
_CODEC = Codec([PlannerSnapshot, EstimatorState, RoundObservation, Calibration, RoundLoss, Assignment,
                DeviceState, Thermal, Link])


def path_of(directory: Path, rounds: int) -> Path:
    """The planner file of the checkpoint after ``rounds`` rounds."""
    return directory / f"dynamite-{rounds}.safetensors"


def save(directory: Path, planner: object, rounds: int, digest: str) -> None:
    """Write ``planner``'s state for the checkpoint after ``rounds`` rounds (no-op unless DYNAMITE)."""
    if not isinstance(planner, DynamitePlanner):
        return
    tensors: dict[str, torch.Tensor] = {}
    state = json.dumps({"digest": digest, "state": _CODEC.encode(snapshot(planner), tensors)}).encode()
    tensors[STATE_KEY] = torch.frombuffer(bytearray(state), dtype=torch.uint8)
    atomic.write_with(path_of(directory, rounds), lambda tmp: save_file(tensors, str(tmp)))


def prune(directory: Path, rounds: int) -> None:
    """Remove the planner files of checkpoints other than the one after ``rounds`` rounds."""
    keep = path_of(directory, rounds)
    for old in directory.glob("dynamite-*.safetensors"):
        if old != keep:
            old.unlink()


def load(directory: Path, planner: object, rounds: int, digest: str) -> None:
    """Restore ``planner`` from the file of the checkpoint after ``rounds`` rounds (no-op unless DYNAMITE).

    Raises:
        CheckpointError: the file is missing, damaged, or of another run.
    """
    if not isinstance(planner, DynamitePlanner):
        return
    path = path_of(directory, rounds)
    try:
        with safe_open(str(path), framework="pt") as f:
            tensors = {key: f.get_tensor(key) for key in f.keys()}
        data = json.loads(bytes(tensors.pop(STATE_KEY).numpy()).decode("utf-8"))
    except (SafetensorError, OSError, ValueError, KeyError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: DYNAMITE's planner state is missing or unreadable ({str(exc)[:120]})") from None
    if not isinstance(data, dict) or data.get("digest") != digest:
        raise CheckpointError(f"{path}: DYNAMITE's planner state belongs to another run")
    try:
        value = _CODEC.decode(data.get("state"), tensors)
    except CheckpointError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    if not isinstance(value, PlannerSnapshot):
        raise CheckpointError(f"{path}: holds a {type(value).__name__}, not DYNAMITE's planner state")
    restore(planner, value)
