"""The memory model against the tensor allocator: fedfit's own trainer, measured in the test."""

from __future__ import annotations

import pytest
import torch

from fedfit.cost import MemoryModel, measure
from fedfit.cost.allocator import peak_live_bytes
from fedfit.devices import TIERS
from fedfit.models import ModelSpec
from fedfit.policy.batching import decide_batch
from fedfit.training.trainer import train
from fedfit.types import Techniques, TrainPlan
from tests.helpers import state

SPECS = {"logreg": ModelSpec("logreg", (1, 28, 28), 10), "mlp": ModelSpec("mlp", (1, 28, 28), 10),
         "cnn": ModelSpec("cnn", (1, 28, 28), 10), "cnn1d": ModelSpec("cnn1d", (1, 1024), 4)}
TENSORS_ONLY = MemoryModel(workspace_bytes=0)  # the allocator sees tensors, not the runtime's workspace


def trainer_peak_bytes(spec: ModelSpec, micro_batch: int, steps: int = 2,
                       techniques: Techniques = Techniques()) -> int:
    """Allocator-measured peak of fedfit's ``train`` over ``steps`` steps: weights + live growth."""
    model = spec.build()
    params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    gen = torch.Generator().manual_seed(1)
    x = torch.randn((micro_batch * steps, *spec.input_shape), generator=gen)
    y = torch.randint(0, spec.num_classes, (micro_batch * steps,), generator=gen)
    plan = TrainPlan(device_id=0, round=0, micro_batch=micro_batch, lr=0.01, techniques=techniques)
    train(spec.build(), params, x, y, plan, seed=0)  # warm-up: lazily initialised kernels
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    return weights + peak_live_bytes(lambda: train(model, params, x, y, plan, seed=0))


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("micro_batch", [1, 3, 16])
def test_predicted_peak_within_10_percent_of_the_trainers_allocator_peak(name: str, micro_batch: int) -> None:
    spec = SPECS[name]
    cost = measure(spec)
    measured = trainer_peak_bytes(spec, micro_batch)
    assert TENSORS_ONLY.peak_bytes(cost, micro_batch) == pytest.approx(measured, rel=0.10)


def test_trainer_holds_no_copy_beyond_weights_gradients_and_activations() -> None:
    # at batch 1 the MLP's activations are ~4 KB: the peak is weights + gradients, not ≈3-4× weights
    spec = SPECS["mlp"]
    weights = measure(spec).param_bytes
    assert trainer_peak_bytes(spec, 1) < 2.05 * weights


def test_a_device_whose_free_memory_fits_one_sample_by_the_measured_peak_is_not_declined() -> None:
    # the case: the MLP on a phone whose free memory is near the model's fixed cost
    spec = SPECS["mlp"]
    cost, memory = measure(spec), MemoryModel()
    free = trainer_peak_bytes(spec, 1) + memory.workspace_bytes  # measured tensors + the runtime's workspace
    d = decide_batch(TIERS["older_phone"], state(free_memory_bytes=free), cost, memory)
    assert not d.declined and d.micro_batch == 1
    assert memory.peak_bytes(cost, 1) <= free
