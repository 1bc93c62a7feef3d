"""Liveness: no configuration runs forever. A run that makes no progress stops, saying why.

Progress is a model change: a synchronous round that folded at least one update, an
asynchronous server version applied. A run whose model has not changed for ``stall_timeout_s``
virtual seconds (every invitation failed, declined or went stale: devices that cannot fit the
plan, a fleet offline, a buffer nobody can fill) stops with :class:`~fedfit.errors.RunStopped`,
whose one-line message names the causes seen meanwhile; ``max_wall_s`` bounds the wall-clock
time of a run the same way (a safety net: wall time never decides anything else, so a run that
hits it is not reproducible). The runner still writes the run directory (metrics, events,
summary with ``stopped``, model).

Both loops ask :meth:`Liveness.stop_reason` before each round (sync) or each event (async)
and raise :class:`~fedfit.errors.RunStopped` with it; the time of the last progress is part of their explicit state, so a resumed run
stops exactly where the unbroken one would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass



@dataclass(frozen=True, slots=True)
class Liveness:
    """When a run gives up.

    Attributes:
        stall_timeout_s: virtual seconds without progress before the run stops; ``None``: never
            (a run that cannot progress then runs until killed).
        max_wall_s: wall-clock seconds a run may take; ``None``: no bound.
    """

    stall_timeout_s: float | None = 21600.0
    max_wall_s: float | None = None

    def stop_reason(self, *, now_s: float, progress_s: float, wall_s: float, done: int,
                    failures: Mapping[str, int]) -> str | None:
        """Why the run must stop now (one line), or ``None`` while it may go on.

        Args:
            now_s: virtual time now.
            progress_s: virtual time of the last progress (or of the run's start).
            wall_s: wall-clock seconds the run has taken.
            done: rounds (server versions) finished so far.
            failures: failures by cause since the last progress (named in the message).

        >>> Liveness(stall_timeout_s=600.0).stop_reason(now_s=660.0, progress_s=60.0, wall_s=1.0, done=3,
        ...                                             failures={"out_of_memory": 9})
        'no progress for 600 virtual s (orchestration.stall_timeout_s = 600) after 3 rounds; failures since: out_of_memory 9'
        """
        if self.stall_timeout_s is not None and now_s - progress_s >= self.stall_timeout_s:
            causes = ", ".join(f"{c} {n}" for c, n in sorted(failures.items()) if n) or "no task ended"
            return (f"no progress for {now_s - progress_s:.0f} virtual s (orchestration.stall_timeout_s = "
                    f"{self.stall_timeout_s:g}) after {done} rounds; failures since: {causes}")
        if self.max_wall_s is not None and wall_s >= self.max_wall_s:
            return (f"wall-time bound reached ({wall_s:.0f} s >= orchestration.max_wall_s = "
                    f"{self.max_wall_s:g}) after {done} rounds")
        return None
