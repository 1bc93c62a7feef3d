"""Checkpointing's memory: each recomputed stage's own step peak, against hand counts and the allocator."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fedfit.cost import MemoryModel, measure
from fedfit.cost.stages import measure_stages
from fedfit.cost.techniques import plan_peak_bytes
from fedfit.models import ModelSpec
from fedfit.types import Techniques, TrainPlan
from tests.cost.test_allocator import TENSORS_ONLY, trainer_peak_bytes

D, H, C = 20, 64, 10  # input features, hidden units, classes


def test_a_stages_step_peak_counts_its_backward_gradient_buffers_by_hand() -> None:
    # stages: linear(20→64)+ReLU, linear(64→64, no bias)+ReLU, linear(64→10) with the loss.
    # Per sample, 4 B a float, at the moment backward allocates the stage's last gradient:
    # hidden stage: its output (held by ReLU) H, the output's gradient H, ReLU's input gradient H,
    #   the input's gradient H → 16·H; it saves only 4·H beside its input.
    # first stage: the same but no input gradient (the data needs none) → 12·H.
    # last stage: logits C, their gradient C (log-softmax's saved output already released),
    #   the input's gradient H → 4·(H + 2·C).
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(D, H), nn.ReLU(), nn.Linear(H, H, bias=False), nn.ReLU(), nn.Linear(H, C))
    first, hidden, last = measure_stages(model, (D,))
    assert (first.step_bytes, hidden.step_bytes, last.step_bytes) == (12 * H, 16 * H, 4 * (H + 2 * C))
    assert hidden.internal_bytes == 4 * H


def test_checkpointing_the_zoo_mlp_saves_nothing_by_hand() -> None:
    # fc1 (784→200)+ReLU: 12·200 B per sample, fc2 (200→200)+ReLU: 16·200, as counted above.
    # Recomputing fc2 holds the kept inputs 784·4 + 200·4 and its step 3200 = 7136 B per sample,
    # more than the plain step's measured peak per sample (the data dominates): the plain
    # figure caps it, so the checkpointed plan's peak is the plain one.
    spec = ModelSpec("mlp", (1, 28, 28), 10)
    cost = measure(spec)
    fc1, fc2 = cost.stages[:2]
    assert (fc1.step_bytes, fc2.step_bytes) == (12 * 200, 16 * 200)
    assert cost.peak_bytes_per_sample < 784 * 4 + 200 * 4 + 16 * 200
    checkpointed = TrainPlan(0, 0, 32, techniques=Techniques(checkpointing=True))
    assert plan_peak_bytes(TENSORS_ONLY, cost, checkpointed) == TENSORS_ONLY.peak_bytes(cost, 32)


@pytest.mark.parametrize(("name", "micro_batch"), [("cnn", 16), ("mobilenetv2", 8)])
def test_checkpointed_peak_within_10_percent_of_the_trainers_allocator_peak(name: str, micro_batch: int) -> None:
    spec = {"cnn": ModelSpec("cnn", (1, 28, 28), 10),
            "mobilenetv2": ModelSpec("mobilenetv2", (3, 64, 64), 10, width=0.35, norm="batch")}[name]
    techniques = Techniques(checkpointing=True)
    measured = trainer_peak_bytes(spec, micro_batch, techniques=techniques)
    predicted = plan_peak_bytes(TENSORS_ONLY, measure(spec), TrainPlan(0, 0, micro_batch, techniques=techniques))
    assert predicted == pytest.approx(measured, rel=0.10)


def test_checkpointing_lowers_mobilenets_predicted_peak_by_what_the_allocator_shows() -> None:
    # the recomputed inverted residual's gradient buffers (6×-expanded activations) are charged
    spec = ModelSpec("mobilenetv2", (3, 64, 64), 10, width=0.35, norm="batch")
    cost = measure(spec)
    block = max(cost.stages, key=lambda s: s.step_bytes)
    assert block.name == "blocks.1" and block.step_bytes > 1.5 * block.internal_bytes
    plain = MemoryModel(workspace_bytes=0).peak_bytes(cost, 8)
    assert plan_peak_bytes(TENSORS_ONLY, cost, TrainPlan(0, 0, 8, techniques=Techniques(checkpointing=True))) < plain
