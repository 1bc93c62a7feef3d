"""The aggregation rule: pluggable weights and server step around the one masked average.

An :class:`AggregationRule` composes a base weighting (samples, examples, steps, batch size,
uniform), a participation factor (:mod:`fedfit.aggregation.participation`), a staleness
discount, optional FedNova normalisation and a server learning rate.
:func:`aggregate` turns arriving updates into :class:`Contribution` s, folds them with
:func:`masked_weighted_average` and moves the master with :func:`server_step`::

    w_i = weighting(u_i) · ω_i · s(staleness_i)      ω_i = participation(versions folded so far)
    x̄   = masked_weighted_average(x, [(y_i, w_i)])      y_i = x_i, or FedNova's normalised x_i
    x  ← x + η (x̄ − x)      η = server_lr · Σ w_i s_i / Σ w_i · τ_eff

Plain FedAvg is weighting ``samples``, constant staleness, no FedNova, server_lr 1. FedBuff is
K buffered updates with a polynomial discount and η_g; FedAsync is one update at a time with
server_lr α (so η = α·s(t−τ)); FedNova sets τ_eff.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from fedfit.aggregation.average import Contribution, masked_weighted_average
from fedfit.aggregation.fednova import LocalSolver, effective_steps, normalised_params, normalising_length
from fedfit.aggregation.participation import ParticipationFn, unweighted
from fedfit.aggregation.robust.stack import Combine
from fedfit.aggregation.server import server_scale, server_step
from fedfit.aggregation.staleness import StalenessDiscount, StalenessFn
from fedfit.aggregation.weighting import WEIGHTINGS, Weighting
from fedfit.bulk import build_many
from fedfit.types import Params, Update


@dataclass(frozen=True, slots=True)
class Arrival:
    """An update as the server folds it in.

    Attributes:
        update: the device's update.
        staleness: model versions elapsed since the version it started from.
        params: the update in master coordinates (``None``: ``update.params`` already is).
        masks: master coordinates it holds (``None``: all of them).
        participation: its device's participation factor ω (1 unless the rule weights it).
    """

    update: Update
    staleness: int = 0
    params: Params | None = None
    masks: dict[str, torch.Tensor] | None = None
    participation: float = 1.0

    @property
    def master_params(self) -> Params:
        """The update's values in master coordinates."""
        return self.params if self.params is not None else self.update.params


@dataclass(frozen=True)
class AggregationRule:
    """How arrivals become a new master model.

    Attributes:
        weighting: base weight of an update.
        staleness: discount s(staleness) multiplying the weight.
        server_lr: server learning rate (FedBuff η_g, FedAsync α; 1 for FedAvg).
        fednova: FedNova's local-solver description; ``None`` disables normalisation.
        participation: the device's versions folded in so far → its factor ω (the loops fill
            :attr:`Arrival.participation` from it).
        combine: the rule that folds contributions into the master: the masked weighted
            average, or a robust, private or secure one (:mod:`fedfit.aggregation.robust`,
            :mod:`fedfit.security`).
    """

    weighting: Weighting = WEIGHTINGS["samples"]
    participation: ParticipationFn = unweighted
    staleness: StalenessFn = StalenessDiscount()
    server_lr: float = 1.0
    fednova: LocalSolver | None = None
    combine: Combine = masked_weighted_average


def aggregate(master: Params, arrivals: Sequence[Arrival], rule: AggregationRule = AggregationRule()) -> Params:
    """Fold ``arrivals`` into ``master`` under ``rule`` (``master`` unchanged when empty).

    >>> import torch
    >>> from fedfit.types import Update
    >>> u = Update(0, 0, {"w": torch.tensor([2.0])}, 1, 1, 1, 1, 1, 0.0)
    >>> aggregate({"w": torch.tensor([0.0])}, [Arrival(u)], AggregationRule(server_lr=0.5))["w"]
    tensor([1.])
    """
    if not arrivals:
        return master
    updates = [a.update for a in arrivals]
    weighting = rule.weighting
    return aggregate_columns(master, rule, Arrivals(
        updates, [weighting(u) for u in updates], [a.staleness for a in arrivals], [a.params for a in arrivals],
        [a.masks for a in arrivals], [a.participation for a in arrivals]))


@dataclass(frozen=True, slots=True)
class Arrivals:
    """Arrivals as columns, one entry per update in order (what :class:`Arrival` holds, and
    each update's weight): a synchronous round folds ≈ 1,000 without an object each.

    Attributes:
        updates: the devices' updates.
        base_weights: ``rule.weighting`` of each update.
        staleness: model versions elapsed since each update's version.
        params: each update in master coordinates (``None``: its own params already are).
        masks: the master coordinates each holds (``None``: all of them).
        participation: each device's participation factor ω.
    """

    updates: Sequence[Update]
    base_weights: Sequence[float]
    staleness: Sequence[int]
    params: Sequence[Params | None]
    masks: Sequence[dict[str, torch.Tensor] | None]
    participation: Sequence[float]


def aggregate_columns(master: Params, rule: AggregationRule, arrivals: Arrivals) -> Params:
    """:func:`aggregate` of arrivals held as columns (``master`` unchanged when there are none)."""
    if not arrivals.updates:
        return master
    fednova = rule.fednova
    weights = [w * p for w, p in zip(arrivals.base_weights, arrivals.participation, strict=True)]
    discounts = _discounts(rule.staleness, arrivals.staleness)
    params = [u.params if p is None else p for u, p in zip(arrivals.updates, arrivals.params, strict=True)]
    if fednova:
        lengths = [normalising_length(u.steps, fednova) for u in arrivals.updates]
        contributions = [Contribution(normalised_params(master, x, n), w * s, m)
                         for x, w, s, n, m in zip(params, weights, discounts, lengths, arrivals.masks, strict=True)]
    else:
        lengths = [1.0] * len(params)
        contributions = build_many(Contribution, len(params), {  # field by field (fedfit.bulk)
            "params": params, "weight": [w * s for w, s in zip(weights, discounts, strict=True)],
            "masks": arrivals.masks})
    combined = [c.weight for c in contributions]
    if sum(combined) <= 0:
        return master
    averaged = rule.combine(master, contributions)
    tau_eff = effective_steps(combined, lengths) if fednova else 1.0
    return server_step(master, averaged, server_scale(server_lr=rule.server_lr, weights=weights,
                                                      discounts=discounts, tau_eff=tau_eff))


def _discounts(staleness: StalenessFn, elapsed: Sequence[int]) -> list[float]:
    """``staleness(t)`` of each ``t`` in ``elapsed``, asked once per distinct ``t`` (a pure
    function; a round's updates are mostly equally stale).

    >>> _discounts(StalenessDiscount("polynomial", exponent=1.0), [0, 1, 0, 3])
    [1.0, 0.5, 1.0, 0.25]
    """
    once = {t: staleness(t) for t in set(elapsed)}
    return [once[t] for t in elapsed]
