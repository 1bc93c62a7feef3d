"""Sub-model exchange: what each device downloads, and how its update returns to the master.

For each dispatched plan the exchange picks the plan's coordinate map (its width and the index choice), sends
only the sub-model's tensors, and on the way back validates the update against the sub-model's shapes,
scatters it into master coordinates and hands the aggregator a :class:`~fedfit.aggregation.Contribution` whose
masks mark the coordinates it held. The masked weighted average then *is* HeteroFL's width-aware aggregation
(Diao et al. 2021): each master coordinate is averaged over the devices that held it, coordinates nobody
trained keep their value. The master model itself is never trained. Channel statistics of every accepted
update are accumulated here (for ``importance`` indices and ``fedfit prune``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Protocol

import torch

from fedfit.aggregation import Contribution, validate_masks, validate_params
from fedfit.aggregation.validate import finite_rows, valid_rows
from fedfit.errors import UpdateRejected
from fedfit.models import ModelSpec
from fedfit.models.channel_stats import ChannelStats
from fedfit.models.coordinates import CoordinateMap, WidthGroup, width_groups
from fedfit.models.indices import choose_map, width_counts
from fedfit.orchestration.stats_fold import Fold, StatsFold
from fedfit.types import Params, TrainPlan, Update

#: Per-parameter boolean masks of the master coordinates an update holds.
Masks = dict[str, torch.Tensor]

#: An update received: in master coordinates with its masks, or why it was rejected.
Received = tuple[Params, Masks | None] | UpdateRejected


@dataclass(frozen=True)
class ExchangeState:
    """What a :class:`SubModelExchange` remembers between events.

    Attributes:
        stats: channel statistics accumulated from accepted updates.
        pending: (device, round) → the coordinate map of the sub-model sent for a task in flight.
    """

    stats: ChannelStats
    pending: dict[tuple[int, int], CoordinateMap]


class SubModelExchange:
    """Slices plans' sub-models out of the master and folds their updates back in.

    Args:
        groups: the master's width groups.
        counts: units per group of the sub-model at a width (relative to the master); raises
            :class:`~fedfit.errors.PlanError` for a width the model cannot take.
        indices: ``prefix``, ``random`` or ``importance``.
        seed: fixes ``random`` draws (with device and round).
        background_stats: fold a round's channel statistics on a thread (:mod:`.stats_fold`; ``False``: in line).
    """

    def __init__(self, groups: tuple[WidthGroup, ...], counts: Callable[[float], dict[str, int]],
                 indices: str = "prefix", seed: int = 0, background_stats: bool = True) -> None:
        self.groups, self.indices, self.seed = groups, indices, seed
        self._stats = StatsFold(ChannelStats.empty(self.groups), self.groups, background_stats)
        self._count, self._counts = counts, dict[float, dict[str, int]]()
        self._whole = CoordinateMap(self.groups, {})  # the map of every full-width plan
        self._full_widths: dict[float, bool] = {}
        self._pending: dict[tuple[int, int], CoordinateMap] = {}
        self._rounds: dict[int, list[int]] = {}  # device -> rounds of its keys in _pending

    @classmethod
    def for_spec(cls, spec: ModelSpec, indices: str = "prefix", seed: int = 0) -> SubModelExchange:
        """The exchange of a zoo model."""
        return cls(width_groups(spec.build()), functools.partial(width_counts, spec), indices, seed)

    @property
    def stats(self) -> ChannelStats:  # every accepted update's, once a round's fold has ended
        return self._stats.value

    @stats.setter
    def stats(self, stats: ChannelStats) -> None:
        self._stats.value = stats

    def counts(self, width: float) -> dict[str, int]:
        """Units per width group of the sub-model at ``width`` (cached)."""
        if width not in self._counts:
            self._counts[width] = self._count(width)
        return self._counts[width]

    def map_for(self, plan: TrainPlan) -> CoordinateMap:
        """The coordinate map of ``plan``'s sub-model."""
        if self._is_full_width(plan.width):  # every unit of every group: no indices to choose
            return self._whole
        return choose_map(self.groups, self.counts(plan.width), self.indices, seed=self.seed,
                          device_id=plan.device_id, round_=plan.round, scores=self.stats.scores)

    def _is_full_width(self, width: float) -> bool:
        """Whether the sub-model at ``width`` keeps every unit of every group (cached)."""
        if (full := self._full_widths.get(width)) is None:
            counts = self.counts(width)
            full = self._full_widths[width] = all(counts.get(g.name) == g.size for g in self.groups)
        return full

    def outgoing(self, plan: TrainPlan, master: Params) -> Params:
        """The sub-model parameters to send with ``plan`` (remembered until its update returns)."""
        self._stats.wait()  # the last round's fold ends before any task of the next is sent
        cmap = self.map_for(plan)
        for r in self._rounds.pop(plan.device_id, []):  # one task per device in flight
            self._pending.pop((plan.device_id, r), None)
        self._pending[(plan.device_id, plan.round)] = cmap
        self._rounds[plan.device_id] = [plan.round]
        return dict(master) if not cmap.kept else cmap.extract(master)

    def outgoing_many(self, plans: Sequence[TrainPlan], master: Params) -> list[Params]:
        """:meth:`outgoing` of each plan in order; full-width plans share one copy of ``master`` (nothing
        writes a task's parameters), remembered together when all are full-width, one per device."""
        self._stats.wait()  # as in outgoing: no fold runs while tasks train or a pool forks
        whole, pending, rounds = self._whole, self._pending, self._rounds
        full = {w: self._is_full_width(w) and not whole.kept for w in set(map(attrgetter("width"), plans))}
        shared = dict(master)
        devices = list(map(attrgetter("device_id"), plans))
        if not all(full.values()) or len(set(devices)) < len(devices):  # plan by plan (a repeat forgets the last)
            sent = [self.outgoing(plan, master) for plan in plans]
            return [shared if full[plan.width] else params for plan, params in zip(plans, sent)]
        versions = list(map(attrgetter("round"), plans))
        for device in rounds.keys() & devices:  # one task per device in flight
            for r in rounds.pop(device):
                pending.pop((device, r), None)
        pending.update(dict.fromkeys(zip(devices, versions), whole))
        rounds.update(zip(devices, map(list, zip(versions))))
        return [shared] * len(plans)

    def incoming(self, update: Update, master: Params, weight: float, *,
                 known_finite: bool = False, known_valid: bool = False) -> tuple[Params, Masks | None]:
        """``update`` in master coordinates, with the masks of the coordinates it held.

        Args:
            update: parameters in the shape of the sub-model that was sent.
            master: the current master (fills the coordinates the update did not hold).
            weight: the update's aggregation weight (for the channel statistics).
            known_finite: its values are already known finite (:meth:`incoming_many`).
            known_valid: it already passed :func:`~fedfit.aggregation.validate_params` against
                the whole ``master`` (:meth:`incoming_many`): not checked again when the whole
                model was sent (a sub-model's update is checked against the sub-model).

        Raises:
            UpdateRejected: names, shapes, dtypes or values that do not match the sub-model sent.
        """
        received = self._receive(update, self._take(update), master, weight, known_finite, known_valid)
        self._stats.flush(inline=True)  # one update (asynchronous rounds): no thread for it
        return received

    def _take(self, update: Update) -> CoordinateMap | None:
        """The coordinate map of the sub-model sent for ``update``'s task, forgotten (``None``: none kept)."""
        device, version = update.device_id, update.round
        if version in (held := self._rounds.get(device, [])):
            held.remove(version)
        return self._pending.pop((device, version), None)

    def _receive(self, update: Update, cmap: CoordinateMap | None, master: Params, weight: float,
                 known_finite: bool, known_valid: bool) -> tuple[Params, Masks | None]:
        """:meth:`incoming` of ``update``, sent the sub-model of ``cmap``."""
        if cmap is None or not cmap.kept:
            return self._incoming_whole(update, master, weight, known_finite, known_valid)
        validate_params(cmap.extract(master), update.params, known_finite=known_finite)
        validate_masks(update.params, update.masks)
        held = {name: master[name] for name in update.params}  # frozen layers are not held
        full = cmap.scatter(update.params, held)
        if weight > 0:
            self._stats.add(Fold(master, full, cmap, weight))
        return full, _held_masks(cmap, held, update.masks)

    def incoming_many(self, updates: Sequence[Update], master: Params, weights: Sequence[float]) -> list[Received]:
        """:meth:`incoming` of each of ``updates`` in order (a rejection as its error), the
        checks against the whole master of all of them done together (:func:`_known`). Without
        width groups (no scores to accumulate), an update of the whole model known valid and
        without element masks is taken as :meth:`_incoming_whole` takes it, in this loop."""
        out: list[Received] = []
        counted = 0
        plain = not self.groups
        for update, weight, (valid, finite) in zip(updates, weights, _known(master, updates), strict=True):
            cmap = self._take(update)
            if plain and valid and not update.masks and (cmap is None or not cmap.kept):
                out.append((dict(update.params), None))
                counted += weight > 0
                continue
            try:
                out.append(self._receive(update, cmap, master, weight, finite, valid))
            except UpdateRejected as rejected:
                out.append(rejected)
        if counted:  # what _incoming_whole counts, once
            self._stats.add(Fold(count=counted))
        self._stats.flush()  # folded beside the rest of the round
        return out

    def _incoming_whole(self, update: Update, master: Params, weight: float,
                        known_finite: bool, known_valid: bool) -> tuple[Params, Masks | None]:
        """:meth:`incoming` of an update of the whole model: its own tensors (never changed),
        its element masks, no slicing or scattering."""
        if not known_valid:
            validate_params(master, update.params, known_finite=known_finite)
        validate_masks(update.params, update.masks)
        full = dict(update.params)
        if weight > 0 and self.groups:
            self._stats.add(Fold(master, full, self._whole, weight))
        elif weight > 0:  # no width groups: no scores, only the count (what accumulate returns)
            self._stats.add(Fold(count=1))
        return full, dict(update.masks) if update.masks else None

    def state(self) -> ExchangeState:
        """The exchange's state now, for a checkpoint."""
        return ExchangeState(self.stats, dict(self._pending))

    def restore(self, state: ExchangeState) -> None:
        """Continue from ``state``."""
        self.stats, self._pending = state.stats, dict(state.pending)
        self._rounds = {}
        for device, r in self._pending:
            self._rounds.setdefault(device, []).append(r)

    def contribution(self, update: Update, master: Params, weight: float) -> Contribution:
        """``update`` as a masked :class:`~fedfit.aggregation.Contribution` in master coordinates."""
        full, masks = self.incoming(update, master, weight)
        return Contribution(full, weight, masks)


def _held_masks(cmap: CoordinateMap, held: Params, element_masks: Masks | None) -> Masks | None:
    """Masks in master coordinates: the width slice, narrowed by the update's own element masks
    (partial training, pruning), which are in the sub-model's coordinates."""
    masks = cmap.masks(held)
    for name, sub_mask in (element_masks or {}).items():
        inside = cmap.scatter({name: sub_mask}, {name: torch.zeros_like(held[name], dtype=torch.bool)})
        masks[name] = inside[name]
    return masks or None


class FullModelExchange:
    """No sub-models: every device gets the whole master and returns it whole."""

    def outgoing(self, plan: TrainPlan, master: Params) -> Params:
        """The master itself."""
        return master

    def outgoing_many(self, plans: Sequence[TrainPlan], master: Params) -> list[Params]:
        """The master itself for each plan."""
        return [master] * len(plans)

    def incoming(self, update: Update, master: Params, weight: float, *,
                 known_finite: bool = False, known_valid: bool = False) -> tuple[Params, Masks | None]:
        """The validated update, holding its element masks' coordinates (all, without masks);
        ``known_valid``: it already passed ``validate_params`` against ``master``."""
        if not known_valid:
            validate_params(master, update.params, known_finite=known_finite)
        validate_masks(update.params, update.masks)
        return update.params, update.masks

    def incoming_many(self, updates: Sequence[Update], master: Params, weights: Sequence[float]) -> list[Received]:
        """:meth:`incoming` of each of ``updates`` in order, their checks done together."""
        return _each(self.incoming, updates, master, weights)


class _Incoming(Protocol):
    def __call__(self, update: Update, master: Params, weight: float, *,
                 known_finite: bool = False, known_valid: bool = False) -> tuple[Params, Masks | None]: ...


def _each(incoming: _Incoming, updates: Sequence[Update], master: Params, weights: Sequence[float]) -> list[Received]:
    """``incoming`` of each update in order, told what :func:`_known` knows of it; a rejection as its error."""
    out: list[Received] = []
    for update, weight, (valid, finite) in zip(updates, weights, _known(master, updates), strict=True):
        try:
            out.append(incoming(update, master, weight, known_finite=finite, known_valid=valid))
        except UpdateRejected as rejected:
            out.append(rejected)
    return out


def _known(master: Params, updates: Sequence[Update]) -> list[tuple[bool, bool]]:
    """(valid, finite) of each update: known valid against the whole master (:func:`valid_rows`),
    known finite (so are the valid ones; of the others, :func:`finite_rows`: a sub-model's update)."""
    params = [u.params for u in updates]
    valid = valid_rows(master, params)
    others = [i for i, ok in enumerate(valid) if not ok]
    finite = dict(zip(others, finite_rows([params[i] for i in others]), strict=True))
    return [(ok, ok or finite[i]) for i, ok in enumerate(valid)]


class Exchange(Protocol):
    """What a device downloads for a plan, and how its update returns to master coordinates."""

    def outgoing(self, plan: TrainPlan, master: Params) -> Params: ...

    def incoming(self, update: Update, master: Params, weight: float, *,
                 known_finite: bool = False, known_valid: bool = False) -> tuple[Params, Masks | None]: ...

    def incoming_many(self, updates: Sequence[Update], master: Params, weights: Sequence[float]) -> list[Received]: ...
