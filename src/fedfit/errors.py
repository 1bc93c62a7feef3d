"""fedfit's exceptions, in one place.

::

    FedfitError
    ├── ConfigError        a configuration key is missing, unknown, mistyped or impossible
    ├── DataError          a data set is missing or malformed (names the path and the fix)
    ├── PlanError          a training plan cannot be run on the model it names
    ├── UpdateRejected     an update fails validation (shape, dtype, non-finite values)
    └── CheckpointError    a run directory's checkpoint is missing, damaged or from another run

Each carries a one-line message meant to be shown to the user as it is.
"""


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
