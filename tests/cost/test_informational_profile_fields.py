"""``cpu_cores`` and ``has_npu`` are informational (issue 11 smaller defect, README "Liveness, retry
back-off and the tier floor"): ``flops_per_s`` is the whole processor's peak with all cores and
the utilisation curve its parallel efficiency, and the modelled NPUs run inference, not training,
so neither changes a task's predicted cost."""

from __future__ import annotations

import dataclasses

from fedfit.cost import MemoryModel, measure, task_cost
from fedfit.models import ModelSpec
from fedfit.types import TrainPlan
from tests.helpers import profile, state


def test_cores_and_npu_change_no_predicted_time_memory_or_energy() -> None:
    cost, plan = measure(ModelSpec("logreg", (1, 28, 28), 10)), TrainPlan(0, 0, micro_batch=8)
    costs = [task_cost(plan=plan, profile=dataclasses.replace(profile(), cpu_cores=cores, has_npu=npu),
                       state=state(), cost=cost, memory=MemoryModel(), num_examples=64, bytes_down=1000,
                       bytes_up=1000) for cores, npu in ((1, False), (8, True))]
    assert costs[0] == costs[1]
