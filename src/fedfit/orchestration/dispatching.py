"""A round's plans sent out together: the exchange's payloads, then the fleet's dispatches.

A fleet that takes a round's plans in one call (:class:`BatchDispatch`: the simulated fleet)
gets them so; any other fleet (the network fleet, test fakes) one plan at a time, in order.
Likewise an exchange that slices a round's payloads in one call (:class:`BatchExchange`). The
exchange only remembers what it sent and the fleet only queues what it got, so every payload
is sliced before the first plan is dispatched, with the same payloads and dispatches in the
same order as a loop of ``outgoing`` then ``dispatch`` per plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from fedfit.orchestration.contract import Fleet
from fedfit.orchestration.submodels import Exchange
from fedfit.types import Params, TrainPlan


@runtime_checkable
class BatchDispatch(Protocol):
    """A fleet that takes a round's plans at once."""

    def dispatch_many(self, plans: Sequence[TrainPlan], params: Sequence[Params], now_s: float) -> None:
        """``dispatch`` of each plan with its parameters, in order."""
        ...


@runtime_checkable
class BatchExchange(Protocol):
    """An exchange that slices a round's payloads at once."""

    def outgoing_many(self, plans: Sequence[TrainPlan], master: Params) -> list[Params]:
        """``outgoing`` of each plan, in order."""
        ...


def send_all(fleet: Fleet, exchange: Exchange, plans: Sequence[TrainPlan], master: Params, now_s: float) -> None:
    """Dispatch each of ``plans`` at ``now_s`` with what ``exchange`` sends it from ``master``."""
    if isinstance(exchange, BatchExchange):
        payloads = exchange.outgoing_many(plans, master)
    else:
        payloads = [exchange.outgoing(plan, master) for plan in plans]
    if isinstance(fleet, BatchDispatch):
        fleet.dispatch_many(plans, payloads, now_s)
        return
    for plan, payload in zip(plans, payloads, strict=True):
        fleet.dispatch(plan, payload, now_s)
