"""The Fleet contract: what the orchestrator needs from devices, simulated or real.

``SimulatedFleet`` (virtual clock, in-process or pooled training) and a network fleet implement
it; the orchestrator cannot tell them apart. Results come back as events ordered by the time
they happened.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from fedfit.types import DeviceProfile, DeviceState, Failure, Params, TaskResult, TrainPlan


class Clock(Protocol):
    """Where a fleet's event times come from: the event queue's virtual time in simulation
    (:class:`~fedfit.simulation.fleet.SimulatedFleet` stamps results from its cost model), the
    wall clock in deployment (:class:`~fedfit.transport.clock.WallClock`). The orchestrator reads
    time only through the fleet's event times, so it cannot tell which one runs."""

    def now(self) -> float:
        """Seconds since the run started."""
        ...


class Fleet(Protocol):
    """Devices that take training plans and return results as timed events."""

    def device_ids(self) -> list[int]:
        """All enrolled devices."""
        ...

    def profile(self, device_id: int) -> DeviceProfile:
        """A device's static profile."""
        ...

    def snapshot(self, device_id: int, at_s: float) -> DeviceState:
        """The device's state as its monitor reports it at ``at_s``."""
        ...

    def num_examples(self, device_id: int) -> int:
        """Size of the device's local training set."""
        ...

    def busy(self, device_id: int) -> bool:
        """Whether the device has a task in flight."""
        ...

    def dispatch(self, plan: TrainPlan, params: Params, now_s: float) -> None:
        """Send ``plan`` with the starting ``params`` to its device at ``now_s``."""
        ...

    def next_result(self) -> TaskResult | None:
        """The earliest pending result, or ``None`` when nothing is in flight."""
        ...

    def peek_time(self) -> float | None:
        """Virtual time of the earliest pending result, or ``None``."""
        ...

    def cancel_pending(self) -> list[TrainPlan]:
        """Withdraw every task still in flight; returns their plans."""
        ...


@runtime_checkable
class BatchFleet(Protocol):
    """A fleet that hands a round's due results over at once (:func:`due_results`)."""

    def next_results(self, until_s: float, wanted: int, round_: int) -> list[TaskResult]:
        """What :func:`due_results` returns, in one call (popped first, trained after, in order)."""
        ...


def due_results(fleet: Fleet, until_s: float, wanted: int, round_: int) -> list[TaskResult]:
    """The fleet's results in event order while fewer than ``wanted`` successes of round
    ``round_`` are among them and the next result is due at ``until_s`` or before.

    A :class:`BatchFleet` answers in one call (the simulated fleet pops every due result before
    training any, so the bookkeeping runs back to back); any other fleet is read one result at
    a time, with the same results in the same order.
    """
    if isinstance(fleet, BatchFleet):
        return fleet.next_results(until_s, wanted, round_)
    results: list[TaskResult] = []
    successes = 0
    while successes < wanted and (t := fleet.peek_time()) is not None and t <= until_s:
        result = fleet.next_result()
        assert result is not None
        results.append(result)
        if not isinstance(result.outcome, Failure):
            successes += result.plan.round == round_  # late updates of earlier rounds do not count
    return results
