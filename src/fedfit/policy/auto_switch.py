"""``auto``'s mid-run mode decision: an async run whose global loss has stalled turns synchronous.

Before the first round ``auto`` chooses FedBuff or sync rounds from predicted task times and
label counts (rule 5 of :mod:`fedfit.policy.auto`). What it cannot see there is concept shift:
devices that label the same inputs differently. On such fleets FedBuff's small, stale buffers
pull the model back and forth and the global loss stops falling, while synchronous rounds of k
fresh updates keep improving it. A deployment sees that from the loss of each new model version
on its evaluation data, so an async ``auto`` run watches that series and, once it stops falling,
goes on in synchronous rounds with ``auto``'s deadline and over-selection (one way: sync is the
mode that does not depend on the fleet's concept being shared).

**The rule** (:func:`stalled`). Take the last ``w`` evaluated losses L_1..L_w (one per evaluated
version), fit the least-squares line L_j = a + β j and its standard error
``se = s / √(Σ (j − j̄)²)``, ``s² = Σ residual² / (w − 2)``. The loss is *falling* when the
decrease is significant at the 5% level, one-sided: ``β + t_{0.95, w−2} · se < 0`` (Student's t,
:func:`t_quantile_95`). The run has *stalled* when it is not: a flat or rising loss, or a fall
lost in the series' own noise. Nothing is tuned: the threshold is the series' noise (the
residual scatter) times the t quantile of a conventional 5% test.

**The window** (:func:`window`): ``w = max(5, ⌈n / b⌉)`` evaluated versions, n the devices that
can train and b FedBuff's buffer: the versions in which as many updates are folded as there are
devices, so that on skewed data the window spans the fleet, not the few devices that happened
to arrive; at least 5 points (3 degrees of freedom) so the test has power at all.

**The budget** (:func:`sync_rounds`). An async ``auto`` run of R configured rounds applies
``⌈R k / b⌉`` versions, the R·k updates of R sync rounds (rule 5's budget). A run that switches
after version v keeps that budget: the versions left, ``V − v``, are ``(V − v) b`` updates, so
``⌈(V − v) b / k⌉`` synchronous rounds of k.

**Resume.** The decision reads only the reports' loss series, so a resumed run finds the switch
where the unbroken run made it by replaying the rule over the saved reports
(:func:`switch_point`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

#: Fewest evaluated versions the trend test reads (3 degrees of freedom).
MIN_WINDOW = 5


def t_quantile_95(dof: int) -> float:
    """Student's t 95% quantile with ``dof`` degrees of freedom (Cornish–Fisher expansion around the
    normal quantile; within 0.3% of the exact value for dof ≥ 3).

    >>> round(t_quantile_95(3), 2), round(t_quantile_95(10), 3)  # tables: 2.353, 1.812
    (2.35, 1.812)
    """
    if dof < 1:
        raise ValueError("t quantile needs at least one degree of freedom")
    z = NormalDist().inv_cdf(0.95)
    return (z + (z ** 3 + z) / (4 * dof) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * dof ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * dof ** 3))


def trend(losses: Sequence[float]) -> tuple[float, float]:
    """Least-squares slope of ``losses`` against their index and its standard error.

    >>> trend([3.0, 2.0, 1.0])  # an exact line: slope −1, no scatter
    (-1.0, 0.0)
    """
    w = len(losses)
    if w < 3:
        raise ValueError("a trend needs at least three points")
    mean_x, mean_y = (w - 1) / 2, sum(losses) / w
    sxx = sum((j - mean_x) ** 2 for j in range(w))
    slope = sum((j - mean_x) * (y - mean_y) for j, y in enumerate(losses)) / sxx
    residual = sum((y - mean_y - slope * (j - mean_x)) ** 2 for j, y in enumerate(losses))
    return slope, math.sqrt(residual / (w - 2) / sxx)


def stalled(losses: Sequence[float | None], w: int) -> bool:
    """Whether the last ``w`` evaluated losses (``None``: a version not evaluated) show no
    significant fall (module docstring); ``False`` while fewer than ``w`` are known. A loss that
    is not finite (the model diverged) is no fall."""
    known = [x for x in losses if x is not None]
    if w < 3 or len(known) < w:
        return False
    if not all(math.isfinite(x) for x in known[-w:]):
        return True
    slope, se = trend(known[-w:])
    return slope + t_quantile_95(w - 2) * se >= 0


def window(trainable: int, buffer_size: int) -> int:
    """Evaluated versions the test reads: as many updates as trainable devices, at least 5.

    >>> window(30, 3), window(6, 3)
    (10, 5)
    """
    return max(MIN_WINDOW, math.ceil(trainable / max(1, buffer_size)))


def switch_point(losses: Sequence[float | None], w: int) -> int | None:
    """The number of versions after which the rule first found a stall (``None``: never)."""
    return next((v for v in range(1, len(losses) + 1) if stalled(losses[:v], w)), None)


def sync_rounds(versions_left: int, buffer_size: int, clients_per_round: int) -> int:
    """Synchronous rounds of k that fold the updates of ``versions_left`` FedBuff versions of b.

    >>> sync_rounds(13, 3, 6)  # 39 updates: 7 rounds of 6
    7
    """
    return max(0, math.ceil(versions_left * buffer_size / clients_per_round - 1e-9))
