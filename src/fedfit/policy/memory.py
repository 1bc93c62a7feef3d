"""Assign memory-saving techniques to the devices that need them.

Wraps a base planner. Mode ``all`` gives every device the configured combination; mode
``auto`` leaves a device's plan plain when its predicted peak fits its free memory and
otherwise tries the candidate techniques in order, taking the first option that fits: the
least pruning sparsity, the deepest split cut, the device's current progressive stage. The
planner keeps each device's progressive stage (server state), advancing it every
``rounds_per_stage`` progressive tasks. Over dynamic batching a plan "fits" when the batch
policy affords at least one sample with the techniques, and the chosen techniques' plan gets
the batch they afford (:meth:`~fedfit.policy.batch_planner.DynamicBatchPlanner.refit`): a
technique that lowers the per-sample or fixed bytes lets the batch grow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from fedfit.cost.memory import MemoryModel
from fedfit.cost.profile import ModelCost
from fedfit.cost.techniques import plan_peak_bytes
from fedfit.policy.batch_planner import DynamicBatchPlanner
from fedfit.policy.planning import Planner
from fedfit.training.freezing import select_stages
from fedfit.types import DeviceProfile, DeviceState, Techniques, TrainPlan


@dataclass(frozen=True, slots=True)
class MemorySettings:
    """Technique parameters (the ``memory:`` config section as values)."""

    mode: str = "auto"
    techniques: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ("checkpointing", "selective", "partial", "pruning", "progressive", "split")
    selective_mode: str = "head"
    selective_k: int = 1
    keep_fraction: float = 0.5
    sparsities: tuple[float, ...] = (0.5, 0.7, 0.9)
    sparsity_by_tier: dict[str, float] = field(default_factory=dict)
    qat_bits: int = 8
    rounds_per_stage: int = 2
    split_cut: int | None = None
    edge_flops_per_s: float = 1e11
    seed: int = 0


class MemoryPlanner:
    """A planner that fits techniques to each device's free memory (see the module docstring).

    Args:
        base: the planner whose plans are fitted.
        settings: technique parameters.
        costs: measured model cost per width.
        memory: the memory model (same as the fleet's).
        num_stages: stages of the model.
        num_examples: local training-set size per device id (a plan fits at the micro-batch its
            device can run, :meth:`~fedfit.types.TrainPlan.for_samples`); empty: at its planned one.
    """

    def __init__(self, base: Planner, *, settings: MemorySettings, costs: Callable[[float], ModelCost],
                 memory: MemoryModel, num_stages: int, num_examples: Sequence[int] = ()) -> None:
        self.base, self.settings, self.costs, self.memory = base, settings, costs, memory
        self.num_stages, self.num_examples = num_stages, num_examples
        self.progressive_tasks: dict[int, int] = {}

    def progressive_stage(self, device_id: int) -> int:
        """The stage a device trains next under progressive training."""
        done = self.progressive_tasks.get(device_id, 0)
        return min(self.num_stages - 1, done // self.settings.rounds_per_stage)

    def plan(self, device_id: int, round_: int, profile: DeviceProfile, state: DeviceState) -> TrainPlan:
        plan = self.base.plan(device_id, round_, profile, state)
        fits = self._fits(plan, profile, state)
        chosen: Techniques | None
        if self.settings.mode == "all":
            chosen = self._combined(plan, profile, fits)
        elif fits(plan.techniques):
            return plan
        else:
            chosen = next((t for name in self.settings.candidates
                           for t in self._options(name, plan, profile) if fits(t)), None)
        if chosen is None:
            return plan
        if chosen.progressive_stage is not None:
            self.progressive_tasks[device_id] = self.progressive_tasks.get(device_id, 0) + 1
        fitted = dataclasses.replace(plan, techniques=chosen)
        if isinstance(self.base, DynamicBatchPlanner):  # the batch grows into what the techniques save
            return self.base.refit(fitted, profile, state) or fitted
        return fitted

    def _fits(self, plan: TrainPlan, profile: DeviceProfile, state: DeviceState) -> Callable[[Techniques], bool]:
        """Whether the plan fits with techniques ``t``: at its batch, or under dynamic batching,
        whether the batch policy affords at least one sample with them."""
        if isinstance(self.base, DynamicBatchPlanner):
            dynamic = self.base
            return lambda t: not dynamic.decide(profile, state, plan.width, t).declined
        cost, memory = self.costs(plan.width), self.memory.for_device(profile)
        free, held = state.free_memory_bytes, plan.for_samples(self._held(plan.device_id))
        return lambda t: plan_peak_bytes(memory, cost, dataclasses.replace(held, techniques=t)) <= free

    def _held(self, device_id: int) -> int:
        return self.num_examples[device_id] if device_id < len(self.num_examples) else 0

    def _base(self) -> Techniques:
        return Techniques(mask_seed=self.settings.seed, edge_flops_per_s=self.settings.edge_flops_per_s)

    def _options(self, name: str, plan: TrainPlan, profile: DeviceProfile) -> Iterator[Techniques]:
        """The settings of technique ``name`` for this plan, most accurate first."""
        s, base = self.settings, self._base()
        if name == "checkpointing":
            yield dataclasses.replace(base, checkpointing=True)
        elif name == "selective":
            stages = select_stages(s.selective_mode, s.selective_k, plan.round, self.num_stages)
            yield dataclasses.replace(base, train_stages=stages, importance_k=None if stages else s.selective_k)
        elif name == "partial":
            yield dataclasses.replace(base, keep_fraction=s.keep_fraction)
        elif name == "pruning":
            tiers = (s.sparsity_by_tier[profile.tier],) if profile.tier in s.sparsity_by_tier else sorted(s.sparsities)
            yield from (dataclasses.replace(base, sparsity=x) for x in tiers)
        elif name == "qat":
            yield dataclasses.replace(base, qat_bits=s.qat_bits)
        elif name == "progressive":
            yield dataclasses.replace(base, progressive_stage=self.progressive_stage(plan.device_id))
        elif name == "split":
            cuts: Sequence[int] = (s.split_cut,) if s.split_cut else range(self.num_stages - 1, 0, -1)
            yield from (dataclasses.replace(base, split_cut=c) for c in cuts)

    def _combined(self, plan: TrainPlan, profile: DeviceProfile, fits: Callable[[Techniques], bool]) -> Techniques:
        """Every configured technique merged; for each, its first option that fits (else its last)."""
        merged = self._base()
        for name in self.settings.techniques:
            options = list(self._options(name, plan, profile))
            pick = next((t for t in options if fits(_merge(merged, t))), options[-1])
            merged = _merge(merged, pick)
        return merged


def _merge(a: Techniques, b: Techniques) -> Techniques:
    """``a`` with every field that ``b`` sets away from the default."""
    default = Techniques()
    changes = {f.name: getattr(b, f.name) for f in dataclasses.fields(Techniques)
               if getattr(b, f.name) != getattr(default, f.name)}
    return dataclasses.replace(a, **changes)
