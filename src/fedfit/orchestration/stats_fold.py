"""Channel statistics folded on a thread beside the round, in the order the updates arrived.

A synchronous round's accepted updates each add their unit magnitudes to the exchange's
:class:`~fedfit.models.channel_stats.ChannelStats` (float64 squares and sums over every
parameter a width group owns: ≈ 1 ms an update for the zoo's MLP), yet nothing reads the
statistics while the round's model is averaged and evaluated; only ``importance`` indices
(choosing the next sub-models), a checkpoint and the saved model do. :class:`StatsFold` queues
a round's folds and runs them on one thread, each batch after the one before, with
:func:`~fedfit.models.channel_stats.accumulate` on the same tensors in the same order, so the
statistics are bit for bit those of folding in line (``tests/orchestration/test_stats_fold.py``);
:attr:`StatsFold.value` and :meth:`StatsFold.wait` wait for them. The exchange waits before it
sends the next round's sub-models, so no fold runs while tasks train or a pool forks.

The tensors a fold reads (the master the devices started from, the updates in master
coordinates) are never written after they are queued: aggregation builds a new master, and
an update's tensors are its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fedfit.models.channel_stats import ChannelStats, accumulate
from fedfit.models.coordinates import CoordinateMap, WidthGroup
from fedfit.overlap import Pending, started
from fedfit.types import Params


@dataclass(frozen=True, slots=True)
class Fold:
    """One accepted update to fold: the master it started from, itself in master coordinates,
    its coordinate map and weight; or, with ``count`` only, updates counted without scores."""

    before: Params | None = None
    after: Params | None = None
    cmap: CoordinateMap | None = None
    weight: float = 0.0
    count: int = 0


def folded(stats: ChannelStats, groups: Sequence[WidthGroup], folds: Sequence[Fold]) -> ChannelStats:
    """``stats`` with ``folds`` added in order, as the exchange adds them one by one."""
    for f in folds:
        if f.before is None or f.after is None or f.cmap is None:
            stats = ChannelStats(dict(stats.scores), stats.updates + f.count)
        else:
            stats = accumulate(stats, groups, f.before, f.after, f.cmap, f.weight)
    return stats


def _after(previous: Pending[ChannelStats] | None, stats: ChannelStats, groups: tuple[WidthGroup, ...],
           folds: tuple[Fold, ...]) -> ChannelStats:
    return folded(previous.result() if previous is not None else stats, groups, folds)


class StatsFold:
    """Channel statistics with folds queued and run on a thread (:meth:`flush`), in order.

    Args:
        stats: the statistics to start from.
        groups: the master's width groups.
        background: fold a flushed batch on a thread (``False``: at once, in the caller).
    """

    def __init__(self, stats: ChannelStats, groups: tuple[WidthGroup, ...], background: bool = True) -> None:
        self._stats, self._groups, self._background = stats, groups, background
        self._running: Pending[ChannelStats] | None = None
        self._queued: list[Fold] = []

    def add(self, fold: Fold) -> None:
        """Queue ``fold`` after every fold before it (run by the next :meth:`flush` or read)."""
        self._queued.append(fold)

    def flush(self, inline: bool = False) -> None:
        """Start folding what is queued: on a thread after the batches before it, or at once
        (``inline``, made without ``background``, or only counts to add: after the thread's
        batches, in the caller)."""
        if not self._queued:
            return
        folds, self._queued = tuple(self._queued), []
        if inline or not self._background or all(f.before is None for f in folds):  # counts alone: no thread
            self._stats = folded(self.value, self._groups, folds)
            return
        self._running = started(_after, self._running, self._stats, self._groups, folds)

    def wait(self) -> None:
        """Fold everything queued or running before returning."""
        self.flush()
        if self._running is not None:
            running, self._running = self._running, None
            self._stats = running.result()

    @property
    def value(self) -> ChannelStats:
        """The statistics with every fold added so far (waits for the thread's)."""
        self.wait()
        return self._stats

    @value.setter
    def value(self, stats: ChannelStats) -> None:
        """Replace the statistics (a restored checkpoint): what was queued or running is dropped
        once it ends."""
        if self._running is not None:
            self._running.result()
        self._running, self._queued, self._stats = None, [], stats
