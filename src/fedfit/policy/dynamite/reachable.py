"""Which devices DYNAMITE's bound is written over: the ones expected to train next round.

The bound (:mod:`.bound`) is about the *aggregated* model: a round's step is the data-weighted
mean of the updates the server receives, so its mini-batch noise is that of the devices that
train, with their shares renormalised over them (weights ``q_i = p_i / Σ_{j∈S} p_j`` for the set
S that trains; the estimator already renormalises over the updates it receives), the round
lasts as long as the slowest of them, and it costs their joules. A device that is unreachable
at dispatch fails at once: no time, no joules and no update, so its share, time and energy do
not belong in the bound. Planning for it anyway gives the noise the wrong weights (Σ_S q_i²/b_i
is what the aggregate carries; Σ_all p_i²/b_i counts phantom devices and under-weights the real
ones by (Σ_S p_i)²), and under the energy cap (:mod:`.energy_fill`) it hands the phantoms'
joules to the devices that do train.

So the planner solves over the devices whose last reported state is reachable (``online`` and
with a link; a device that never reported is assumed reachable), with shares renormalised over
them, and gives every other device the best common batch the solve found, within its own cap:
if it comes back it trains a batch the bound chose for the fleet, and the next re-plan includes
it. When none is known reachable the whole fleet is planned for, as before.

A cohort drawn from the reachable devices (``clients_per_round`` below the fleet) trains
``min(1, cohort / reachable)`` of them on average: that share scales the energy a round costs.
"""

from __future__ import annotations

from collections.abc import Sequence

from fedfit.types import DeviceState


def expected_to_train(states: Sequence[DeviceState | None]) -> list[int]:
    """Indices of the devices whose last report says they can be reached (or that never
    reported); every index when none can.

    >>> from fedfit.types import Link, Thermal
    >>> up = DeviceState(1, None, None, None, Thermal.NOMINAL, Link.WIFI, 1e6, online=True)
    >>> down = DeviceState(1, None, None, None, Thermal.NOMINAL, Link.OFFLINE, 0.0, online=False)
    >>> expected_to_train([up, down, None, down]), expected_to_train([down, down])
    ([0, 2], [0, 1])
    """
    kept = [i for i, s in enumerate(states) if s is None or (s.online and s.bandwidth_bps > 0)]
    return kept or list(range(len(states)))


def widen(kept: Sequence[int], batches: Sequence[int], size: int, others: Sequence[int]) -> tuple[int, ...]:
    """The batches of all ``size`` devices: ``batches[j]`` for device ``kept[j]``, ``others[i]``
    for every device ``i`` not kept.

    >>> widen([1, 3], [8, 16], 4, [5, 6, 7, 9])
    (5, 8, 7, 16)
    """
    out = list(others[:size])
    for j, i in enumerate(kept):
        out[i] = batches[j]
    return tuple(out)


def cohort_share(participation: float, fleet: int, planned: int) -> float:
    """The share of the planned devices a round trains: the cohort (``participation`` × the
    fleet) over the planned devices, at most 1.

    >>> cohort_share(0.5, 8, 8), cohort_share(0.5, 8, 6), cohort_share(1.0, 8, 4)
    (0.5, 0.6666666666666666, 1.0)
    """
    return min(1.0, participation * fleet / max(1, planned))
