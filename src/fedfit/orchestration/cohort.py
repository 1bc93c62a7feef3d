"""Inviting a cohort: readiness of the candidates, a selector's choice, and their plans.

Shared by the synchronous and asynchronous loops. The selector sees only
:class:`~fedfit.policy.readiness.Readiness` values, so any readiness source (the cost-model
prediction here, a batch policy's affordable batch, a network fleet's report) plugs in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from fedfit.cost.predictor import TaskPredictor
from fedfit.orchestration.contract import Fleet
from fedfit.policy import Planner, Readiness, Selector, readiness
from fedfit.types import DeviceProfile, DeviceState, TrainPlan, Update

#: Oort feedback per device: (statistical utility, round of its last update).
Feedback = Mapping[int, tuple[float, int]]


def feedback_of(update: Update) -> tuple[float, int]:
    """Oort's statistical utility of an update, |B|·loss, with the round it started from."""
    return update.samples_processed * update.train_loss, update.round


@dataclass(frozen=True)
class Cohort:
    """Plans every candidate, scores readiness, and lets the selector choose.

    Attributes:
        planner: writes each candidate's plan (its batch feeds readiness).
        selector: picks devices from readiness values.
        predictor: predicts task cost and affordable batch.
        batch_readiness: the batch a device reports it can afford now for the sub-model at its
            plan's width, from its own batch policy (the dynamic-batching planner: 0 when it
            would decline); ``None``: the predictor's memory-bound batch.
    """

    planner: Planner
    selector: Selector
    predictor: TaskPredictor
    batch_readiness: Callable[[DeviceProfile, DeviceState, float], int] | None = None

    def invite(self, fleet: Fleet, candidates: Sequence[int], size: int, *, now_s: float, round_: int,
               seed: int, draw: int, feedback: Feedback | None = None) -> list[TrainPlan]:
        """Plans of up to ``size`` devices chosen from ``candidates``.

        Args:
            fleet: where profiles and reported states come from.
            candidates: idle devices that may be invited.
            size: devices wanted.
            now_s: virtual time of the invitation.
            round_: model version the plans start from.
            seed: experiment seed.
            draw: selection counter; with ``seed`` it fixes the draw (the round in sync mode).
            feedback: Oort's per-device statistical utility and last round.
        """
        plans: dict[int, TrainPlan] = {}
        ready: list[Readiness] = []
        for device in sorted(candidates):
            profile, state = fleet.profile(device), fleet.snapshot(device, now_s)
            plans[device] = self.planner.plan(device, round_, profile, state)
            r = readiness(plans[device], profile, state, self.predictor)
            if self.batch_readiness is not None:
                r = dataclasses.replace(r, affordable_batch=self.batch_readiness(profile, state, plans[device].width))
            if feedback and device in feedback:
                r = dataclasses.replace(r, statistical_utility=feedback[device][0], last_round=feedback[device][1])
            ready.append(r)
        return [plans[d] for d in self.selector.select(ready, size, seed=seed, round_=draw)]
