"""The memory planner fits techniques to free memory, picks split cuts and advances stages."""

import dataclasses

from fedfit.cost import MemoryModel, measure
from fedfit.cost.techniques import plan_peak_bytes
from fedfit.models import ModelSpec
from fedfit.policy import FixedPlanner
from fedfit.policy.memory import MemoryPlanner, MemorySettings
from fedfit.types import Techniques, TrainPlan
from tests.helpers import profile, state

SPEC = ModelSpec("cnn", (1, 28, 28), 10)
MEM = MemoryModel(optimizer_slots=2)


def _planner(**settings) -> MemoryPlanner:
    return MemoryPlanner(FixedPlanner(batch_size=32), settings=MemorySettings(**settings),
                         costs=lambda w: measure(SPEC, w), memory=MEM, num_stages=4)


def _peak(t: Techniques) -> int:
    return plan_peak_bytes(MEM, measure(SPEC), TrainPlan(0, 0, 32, techniques=t))


def test_auto_leaves_devices_that_fit_plain() -> None:
    plan = _planner().plan(0, 0, profile(), state(free_memory_bytes=_peak(Techniques())))
    assert plan.techniques == Techniques()


def test_auto_takes_the_first_candidate_that_fits() -> None:
    free = _peak(Techniques(train_stages=(3,)))
    assert free < _peak(Techniques(checkpointing=True))
    plan = _planner(candidates=("checkpointing", "selective")).plan(0, 0, profile(), state(free_memory_bytes=free))
    assert plan.techniques.active == ("selective",) and plan.techniques.train_stages == (3,)


def test_split_cut_is_the_deepest_that_fits() -> None:
    free = _peak(Techniques(split_cut=2))
    assert _peak(Techniques(split_cut=3)) > free
    plan = _planner(candidates=("split",)).plan(0, 0, profile(), state(free_memory_bytes=free))
    assert plan.techniques.split_cut == 2


def test_pruning_takes_the_least_sparsity_that_fits() -> None:
    free = _peak(Techniques(sparsity=0.7))
    assert _peak(Techniques(sparsity=0.5)) > free
    plan = _planner(candidates=("pruning",)).plan(0, 0, profile(), state(free_memory_bytes=free))
    assert plan.techniques.sparsity == 0.7


def test_progressive_stage_advances_every_rounds_per_stage_tasks() -> None:
    planner = _planner(mode="all", techniques=("progressive",), rounds_per_stage=2)
    stages = [planner.plan(5, r, profile(), state()).techniques.progressive_stage for r in range(9)]
    assert stages == [0, 0, 1, 1, 2, 2, 3, 3, 3]
    assert planner.plan(6, 9, profile(), state()).techniques.progressive_stage == 0


def test_mode_all_merges_composable_techniques() -> None:
    planner = _planner(mode="all", techniques=("checkpointing", "qat", "selective"), selective_mode="last_k",
                       selective_k=2, seed=7)
    t = planner.plan(0, 0, profile(), state()).techniques
    assert t == dataclasses.replace(Techniques(checkpointing=True, qat_bits=8, train_stages=(2, 3)), mask_seed=7)


def test_auto_fits_a_device_at_the_samples_it_holds() -> None:
    """Free memory for 4 samples of a batch-32 plan: a device holding 4 needs no technique, one
    holding 40 does."""
    free = plan_peak_bytes(MEM, measure(SPEC), TrainPlan(0, 0, 4))
    assert free < _peak(Techniques())
    planner = MemoryPlanner(FixedPlanner(batch_size=32), settings=MemorySettings(), costs=lambda w: measure(SPEC, w),
                            memory=MEM, num_stages=4, num_examples=[4, 40])
    short, full = (planner.plan(d, 0, profile(), state(free_memory_bytes=free)) for d in (0, 1))
    assert short.techniques == Techniques() and short.micro_batch == 32
    assert full.techniques != Techniques()
