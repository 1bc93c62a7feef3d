"""``auto`` revised from measured durations: the deadline, over-selection and mode verdict again.

Before the first round ``auto`` decides from predicted task times (profile, enrolment report,
cost model, one epoch). Once rounds have run, the registry holds what each device's tasks really
took — with the local epochs, accumulation, throttling and link changes the prediction left out.
:func:`revise` redoes rules 3 and 5 on those times:

1. **Durations**: a device's latest measured update duration when it has one; otherwise its
   prediction × the median measured/predicted ratio of the devices that have one (the cost
   model's bias on this fleet, so unmeasured devices are not judged by a one-epoch prediction
   when tasks run several); a device whose latest task was cut at the deadline took at least the
   time it ran, so its duration is at least that.
2. **Deadline** 1.25 × their 75th percentile, **over-selection** the shortfall of devices within
   it (capped at 1), exactly rules 3 of :mod:`fedfit.policy.auto` on the new times.
3. **Mode verdict** rule 5 (:mod:`fedfit.policy.auto_rates`) on the new times, with the label
   skews the first decision read (they do not change while the data do not). The verdict is
   reported, not acted on: the only mid-run mode change is an async run's switch to sync rounds
   when its loss stalls (:mod:`fedfit.policy.auto_switch`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from fedfit.policy.auto import choose_mode, quantile
from fedfit.policy.auto_rates import Discount


@dataclass(frozen=True, slots=True)
class Observed:
    """What the registry knows of one device's speed.

    Attributes:
        predicted_s: predicted plain task time before the run (``inf``: predicted unable to train).
        measured_s: duration of its latest update (``None``: none yet).
        cut_s: how long its latest task ran before the deadline cut it (``None``: it was not cut).
    """

    predicted_s: float
    measured_s: float | None = None
    cut_s: float | None = None


@dataclass(frozen=True, slots=True)
class Revision:
    """A revised deadline, over-selection and mode verdict, and the durations they came from."""

    deadline_s: float | None
    over_selection: float
    mode: str
    measured: int
    bias: float


def durations(observed: Sequence[Observed]) -> tuple[list[float], float]:
    """Each device's duration (point 1) and the bias (median measured / predicted) applied.

    >>> durations([Observed(1.0, 2.0), Observed(3.0)])  # bias 2: the unmeasured 3 s becomes 6 s
    ([2.0, 6.0], 2.0)
    """
    ratios = [o.measured_s / o.predicted_s for o in observed
              if o.measured_s is not None and math.isfinite(o.predicted_s) and o.predicted_s > 0]
    bias = statistics.median(ratios) if ratios else 1.0
    out = []
    for o in observed:
        t = o.measured_s if o.measured_s is not None else o.predicted_s * bias
        out.append(max(t, o.cut_s) if o.cut_s is not None else t)
    return out, bias


def revise(observed: Sequence[Observed], clients_per_round: int, buffer_size: int,
           async_advantage: float = 1.0, cap: float = 1.0, discount: Discount | None = None,
           skews: Sequence[float] | None = None) -> Revision:
    """Rules 3 and 5 of ``auto`` on measured durations (module docstring); ``skews`` aligned
    with ``observed`` (``None``: no label skew known)."""
    times, bias = durations(observed)
    h = list(skews) if skews is not None else [0.0] * len(times)
    finite = [t for t in times if math.isfinite(t)]
    finite_skews = [x for t, x in zip(times, h, strict=True) if math.isfinite(t)]
    deadline = round(1.25 * quantile(finite, 0.75), 3) if finite else None
    over = 0.0
    if deadline is not None and times:
        on_time = sum(1 for t in times if t <= deadline) / len(times)
        over = cap if on_time == 0 else min(cap, round(1.0 / on_time - 1.0, 3))
    mode = choose_mode(finite, clients_per_round, over, deadline, buffer_size, async_advantage, discount,
                       finite_skews)
    measured = sum(1 for o in observed if o.measured_s is not None)
    return Revision(deadline, over, mode, measured, bias)
