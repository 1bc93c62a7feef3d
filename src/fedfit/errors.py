"""fedfit's exceptions, in one place.

::

    FedfitError
    ├── ConfigError        a configuration key is missing, unknown, mistyped or impossible
    ├── DataError          a data set is missing or malformed (names the path and the fix)
    ├── PlanError          a training plan cannot be run on the model it names
    ├── UpdateRejected     an update fails validation (shape, dtype, non-finite values)
    ├── CheckpointError    a run directory's checkpoint is missing, damaged or from another run
    └── RunStopped         a run made no progress for too long (or hit its wall-time bound) and stopped

Each carries a one-line message meant to be shown to the user as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fedfit.types import RoundReport, TaskResult


class FedfitError(Exception):
    """Base of every error fedfit raises on purpose."""


class ConfigError(FedfitError):
    """A configuration value is wrong; the message names the key."""


class DataError(FedfitError):
    """A data set is missing or malformed; the message names the path and how to get it."""


class PlanError(FedfitError):
    """A training plan does not fit the model or combines techniques that cannot be combined."""


class UpdateRejected(FedfitError):
    """An update failed validation and was not aggregated."""


class CheckpointError(FedfitError):
    """A checkpoint cannot be restored; the message names the file or value at fault."""


class RunStopped(FedfitError):
    """A run stopped before its last round: no progress for too long, or its wall-time bound.

    Attributes:
        results: task results seen since the last finished round (logged as events).
        unfinished: the counters of the round (server version) that never finished, at the
            moment the run stopped; ``None`` when it stopped between rounds.
    """

    def __init__(self, message: str, results: tuple[TaskResult, ...] = (),
                 unfinished: RoundReport | None = None) -> None:
        super().__init__(message)
        self.results, self.unfinished = results, unfinished
