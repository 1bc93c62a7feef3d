"""Width policy: which sub-model width each device trains (seed 003, HeteroFL's width levels).

Modes (one per round and device, from the monitor's last snapshot):

* ``fixed``      — every device at one width;
* ``capability`` — the largest width whose peak memory fits the device's free memory and whose
  modelled task time (download + compute + upload of the sub-model) meets the deadline
  (Diao et al. 2021 assign levels by capability; here capability is re-read every round);
* ``random``     — a width drawn uniformly from the list per (seed, device, round): subnet
  sampling (HeteroFL's dynamic mode);
* ``common``     — the largest width that every device of the fleet fits at rest (the
  smallest common denominator, decided once); like ``capability`` with that one width, so a
  device that cannot fit it at the planned batch micro-batches.

Elastic global width caps every device's width at the *active* width: the ``quantile`` of the
capability widths of the previous round's cohort (so a weak pool shrinks it and strong devices
coming back grow it), starting at the widest. Pure functions plus one small planner.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np

from fedfit.cost import MemoryModel, ModelCost, task_cost
from fedfit.policy.planning import Planner, ProfileOf, StateOf, plans_of
from fedfit.types import DeviceProfile, DeviceState, Link, Thermal, TrainPlan

#: Measured model cost at a width relative to the master.
CostTable = Callable[[float], ModelCost]

WIDTH_MODES = ("fixed", "capability", "random", "common")


def fits(plan: TrainPlan, profile: DeviceProfile, state: DeviceState, *, costs: CostTable,
         memory: MemoryModel, num_examples: int, deadline_s: float | None) -> bool:
    """Whether ``plan`` (at its width) fits free memory and finishes by ``deadline_s``."""
    cost = costs(plan.width)
    task = task_cost(plan=plan, profile=profile, state=state, cost=cost, memory=memory,
                     num_examples=num_examples, bytes_down=cost.param_bytes, bytes_up=cost.param_bytes)
    on_time = deadline_s is None or task.duration_s <= deadline_s
    return task.peak_memory_bytes <= state.free_memory_bytes and on_time


def capability_plan(plan: TrainPlan, profile: DeviceProfile, state: DeviceState, *, widths: Sequence[float],
                    costs: CostTable, memory: MemoryModel, num_examples: int,
                    deadline_s: float | None) -> TrainPlan:
    """``plan`` at the largest of ``widths`` that fits; else the smallest, micro-batched to fit.

    When not even the smallest width fits memory at the plan's micro-batch, the micro-batch
    shrinks to the largest that fits and gradients accumulate to keep the effective batch.
    """
    ordered = sorted(widths, reverse=True)
    for w in ordered:
        candidate = dataclasses.replace(plan, width=w)
        if fits(candidate, profile, state, costs=costs, memory=memory, num_examples=num_examples,
                deadline_s=deadline_s):
            return candidate
    smallest = dataclasses.replace(plan, width=ordered[-1])
    affordable = memory.for_device(profile).max_micro_batch(costs(ordered[-1]), state.free_memory_bytes)
    micro = min(plan.micro_batch, affordable)
    if micro < 1 or micro == plan.micro_batch:
        return smallest
    return dataclasses.replace(smallest, micro_batch=micro,
                               accumulation_steps=math.ceil(plan.effective_batch / micro))


def random_width(widths: Sequence[float], *, seed: int, device_id: int, round_: int) -> float:
    """A width drawn uniformly from ``widths`` by (seed, device, round)."""
    rng = np.random.default_rng([seed, device_id, round_, 0x3D7])
    return float(sorted(widths)[int(rng.integers(len(widths)))])


def nominal_state(profile: DeviceProfile) -> DeviceState:
    """A device at rest: its whole training budget free, cool, on a fast link, online."""
    return DeviceState(free_memory_bytes=profile.training_memory_bytes, battery_fraction=1.0, charging=None,
                       temperature_c=None, thermal=Thermal.NOMINAL, link=Link.WIFI, bandwidth_bps=1e12,
                       online=True)


def common_width(plan: TrainPlan, profiles: Sequence[DeviceProfile], num_examples: Sequence[int], *,
                 widths: Sequence[float], costs: CostTable, memory: MemoryModel,
                 deadline_s: float | None) -> float:
    """The largest width every device fits at rest (the smallest width if some fit none)."""
    common = max(widths)
    for device, profile in enumerate(profiles):
        p = dataclasses.replace(plan, device_id=device)
        got = capability_plan(p, profile, nominal_state(profile), widths=widths, costs=costs, memory=memory,
                              num_examples=num_examples[device], deadline_s=deadline_s)
        common = min(common, got.width)
    return common


def active_width(pool: Sequence[float], widths: Sequence[float], quantile: float) -> float:
    """The elastic global width: the largest listed width ≤ the pool's ``quantile`` width."""
    if not pool:
        return max(widths)
    level = float(np.quantile(np.asarray(pool), quantile, method="lower"))
    return max((w for w in widths if w <= level), default=min(widths))


@dataclass(frozen=True, slots=True)
class WidthPolicy:
    """Width settings (from the ``width:`` config section).

    Attributes:
        mode: ``fixed``, ``capability``, ``random`` or ``common``.
        widths: the width levels devices may get (relative to the master).
        fixed: the width of ``fixed`` mode (and of ``common`` once computed).
        deadline_s: the task-time budget of ``capability``; ``None``: memory only.
        elastic: cap widths at the elastic global width.
        quantile: pool quantile that sets the elastic width.
    """

    mode: str = "fixed"
    widths: tuple[float, ...] = (1.0,)
    fixed: float = 1.0
    deadline_s: float | None = None
    elastic: bool = False
    quantile: float = 0.5


@dataclass
class WidthPlanner:
    """Sets each plan's width (composes any base planner; implements ``Planner``).

    Keeps one piece of state: the capability widths of each round's cohort, for elastic width.
    """

    base: Planner
    policy: WidthPolicy
    costs: CostTable
    memory: MemoryModel
    num_examples: Sequence[int]
    seed: int = 0
    pools: dict[int, list[float]] = field(default_factory=dict)

    def plan(self, device_id: int, round_: int, profile: DeviceProfile, state: DeviceState) -> TrainPlan:
        plan = self.base.plan(device_id, round_, profile, state)
        p = self.policy
        if p.mode == "random":
            plan = dataclasses.replace(plan, width=random_width(p.widths, seed=self.seed, device_id=device_id,
                                                                round_=round_))
        elif p.mode == "capability":
            plan = capability_plan(plan, profile, state, widths=p.widths, costs=self.costs, memory=self.memory,
                                   num_examples=self.num_examples[device_id], deadline_s=p.deadline_s)
        elif plan.width != p.fixed:  # a copy only when it changes (a million plans a run add up)
            plan = dataclasses.replace(plan, width=p.fixed)
        return self._elastic(plan, round_) if p.elastic else plan

    def plan_many(self, device_ids: Sequence[int], round_: int, profile_of: ProfileOf,
                  state_of: StateOf) -> list[TrainPlan]:
        """``plan`` of each device; in ``fixed`` mode without elastic width the base's plans at
        the fixed width (in one call when the base plans in batches), else device by device."""
        p = self.policy
        if p.mode != "fixed" or p.elastic:
            return [self.plan(d, round_, profile_of(d), state_of(d)) for d in device_ids]
        plans = plans_of(self.base, device_ids, round_, profile_of, state_of)
        if set(map(attrgetter("width"), plans)) <= {p.fixed}:  # the base's plans are at the fixed width
            return plans
        return [plan if plan.width == p.fixed else dataclasses.replace(plan, width=p.fixed) for plan in plans]

    def _elastic(self, plan: TrainPlan, round_: int) -> TrainPlan:
        self.pools.setdefault(round_, []).append(plan.width)
        cap = active_width(self.pools.get(round_ - 1, []), self.policy.widths, self.policy.quantile)
        for old in [r for r in self.pools if r < round_ - 1]:
            del self.pools[old]
        return dataclasses.replace(plan, width=min(plan.width, cap)) if plan.width > cap else plan
