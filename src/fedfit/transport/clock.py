"""The wall clock of a deployment (implements :class:`fedfit.orchestration.contract.Clock`).

Seconds since the run started, counted across server restarts: a resumed server starts from
the time its last committed version recorded, so times in the logs never go back.
"""

from __future__ import annotations

import time


class WallClock:
    """Monotonic wall seconds since the run started, continuing from ``start_s``."""

    def __init__(self, start_s: float = 0.0) -> None:
        self._origin = time.monotonic() - start_s

    def now(self) -> float:
        return time.monotonic() - self._origin
