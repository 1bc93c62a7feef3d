"""Every technique's predicted peak against the tensor allocator's measurement of fedfit's own
trainer (issue 11 point 2), at small sizes: the CNN and the MLP, micro-batches 1 and 8."""

from __future__ import annotations

import pytest

from fedfit.cost import ModelCost, measure
from fedfit.cost.techniques import plan_peak_bytes
from fedfit.models import ModelSpec
from fedfit.types import Techniques, TrainPlan
from tests.cost.test_allocator import SPECS, TENSORS_ONLY, trainer_peak_bytes

#: The techniques that change the predicted peak (the CNN's and the MLP's last stage is index 3 / 2).
TECHNIQUES = {
    "pruning": lambda last: Techniques(sparsity=0.9),
    "partial": lambda last: Techniques(keep_fraction=0.25),
    "qat": lambda last: Techniques(qat_bits=8),
    "selective": lambda last: Techniques(train_stages=(last,)),
    "importance": lambda last: Techniques(importance_k=1),
}


@pytest.mark.parametrize("technique", sorted(TECHNIQUES))
@pytest.mark.parametrize(("name", "micro_batch"), [("cnn", 1), ("cnn", 8), ("mlp", 1), ("mlp", 8)])
def test_technique_peak_within_10_percent_of_the_trainers_allocator_peak(technique: str, name: str,
                                                                         micro_batch: int) -> None:
    spec = SPECS[name]
    cost = measure(spec)
    _within_10_percent(spec, micro_batch, TECHNIQUES[technique](len(cost.stages) - 1), cost)


def test_half_width_sub_model_within_10_percent_of_the_trainers_allocator_peak() -> None:
    spec = ModelSpec("cnn", (1, 28, 28), 10, width=0.5)  # the sub-model a device trains at width 0.5
    measured = trainer_peak_bytes(spec, 8)
    assert TENSORS_ONLY.peak_bytes(measure(spec), 8) == pytest.approx(measured, rel=0.10)


def test_checkpointed_1d_cnn_at_micro_batch_1_within_10_percent() -> None:
    # its first convolution's step holds less at micro-batch 1 than the slope through 2 and 10
    # (the measured fixed part is negative): charging the slope over-predicted by 10.8%
    spec = SPECS["cnn1d"]
    techniques = Techniques(checkpointing=True)
    _within_10_percent(spec, 1, techniques)


def test_pruned_lstm_at_micro_batch_1_within_10_percent() -> None:
    # its peak is in the last LSTM layer's backward (dense gradients and the layer's workspace
    # beside the earlier stages' activations), before any gathering: was under-predicted by 11%
    spec = ModelSpec("lstm", (1, 28, 28), 10)
    techniques = Techniques(sparsity=0.9)
    _within_10_percent(spec, 1, techniques)


def test_partial_resnet8_at_micro_batch_1_within_10_percent() -> None:
    # its peak is the gather of the last block's largest weight, beside the activations of the
    # blocks up to it and without the step's convolution workspace: was over-predicted by 24%
    spec = ModelSpec("resnet8", (1, 28, 28), 10, norm="batch")
    techniques = Techniques(keep_fraction=0.25)
    _within_10_percent(spec, 1, techniques)


def test_qat_resnet20_at_micro_batch_1_within_10_percent() -> None:
    # its peak is in the last block's backward, before the earlier blocks' gradients exist:
    # charging every gradient there over-predicted by 23%
    spec = ModelSpec("resnet20", (1, 28, 28), 10, norm="batch")
    techniques = Techniques(qat_bits=8)
    _within_10_percent(spec, 1, techniques)


def test_head_only_resnet8_at_micro_batch_8_within_10_percent() -> None:
    # its peak is the first block's frozen forward: micro-batch 1's convolution workspace was
    # charged as a fixed part at every micro-batch, over-predicting by 20% at 8
    spec = ModelSpec("resnet8", (1, 28, 28), 10, norm="batch")
    cost = measure(spec)
    techniques = Techniques(train_stages=(len(cost.stages) - 1,))
    _within_10_percent(spec, 8, techniques, cost)


def test_head_only_lstm_at_micro_batch_128_within_10_percent() -> None:
    # its peak is the first layer's frozen forward, whose kernel holds a quarter less per sample
    # from micro-batch 128 on than the line through 2 and 10 says: over-predicted by 22% there
    spec = ModelSpec("lstm", (1, 28, 28), 10)
    cost = measure(spec)
    techniques = Techniques(train_stages=(len(cost.stages) - 1,))
    _within_10_percent(spec, 128, techniques, cost)


def _within_10_percent(spec: ModelSpec, micro_batch: int, techniques: Techniques,
                       cost: ModelCost | None = None) -> None:
    """The plan's predicted peak is within 10% of the allocator-measured peak of fedfit's trainer."""
    measured = trainer_peak_bytes(spec, micro_batch, techniques=techniques)
    plan = TrainPlan(0, 0, micro_batch, techniques=techniques)
    assert plan_peak_bytes(TENSORS_ONLY, cost or measure(spec), plan) == pytest.approx(measured, rel=0.10)
