"""Memory model: the peak bytes a training plan needs on a device.

``peak = weights + (gradients + optimiser state) of the trainable part + workspace
       + max(per-sample bytes × micro-batch + fixed step bytes, optimiser-step temporaries)``

Backward holds the gradients while the batch's activations are alive; the optimiser step
comes after the activations are freed, so its temporaries (one parameter-sized copy per
temporary of the tensor being updated, at most the largest) compete only with them. The
per-sample and fixed step terms are measured on the real module with the tensor allocator
(:func:`fedfit.cost.allocator.step_peak_bytes` at two micro-batches, in
:func:`fedfit.cost.profile.measure`), so they count what autograd actually holds at the peak:
saved activations not yet freed, gradient buffers in flight, the gathered batch. Against
fedfit's own trainer measured the same way (``bench/memory_model.py``) the prediction is within
10% for every zoo model at micro-batches 1-128 (within 2% from micro-batch 16 on); at micro-batch 1
it is the measured step itself (where the fixed term fitted through 1 and 33 would be negative it
is clamped at 0 for larger batches, and the shortfall is taken off at 1). The workspace is the runtime's memory outside
the tensor allocator (allocator slack, interpreter, the shuffle order of 8 B per local sample).

A task whose peak exceeds the device's free memory at that virtual moment crashes out of memory.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from fedfit.cost.profile import ModelCost
from fedfit.types import DeviceProfile


def step_activation_bytes(cost: ModelCost, micro_batch: int) -> float:
    """What a plain step holds beyond weights and gradients at ``micro_batch``: per sample ×
    batch + fixed, at micro-batch 1 as measured there (less the shortfall, when the fitted
    fixed term was clamped)."""
    shortfall = cost.one_sample_shortfall_bytes if micro_batch == 1 else 0.0
    return cost.peak_bytes_per_sample * micro_batch + cost.activation_fixed_bytes - shortfall


@dataclass(frozen=True, slots=True)
class MemoryModel:
    """Parameters of the peak-memory formula.

    Attributes:
        optimizer_slots: optimiser state tensors per trainable parameter (SGD 0,
            SGD with momentum 1, Adam 2).
        workspace_bytes: fixed runtime workspace outside the tensor allocator.
        gradient_copies: gradient buffers per trainable parameter (1; 2 with accumulation
            buffers kept separately).
        step_temporaries: parameter-sized temporaries the optimiser step holds at once for the
            tensor it updates (plain SGD 0; weight decay or FedProx 1; Adam 2, 3 with weight
            decay: see :attr:`fedfit.training.optimizers.OptimizerConfig.step_temporaries`).
    """

    optimizer_slots: int = 0
    workspace_bytes: int = 256 * 1024
    gradient_copies: int = 1
    step_temporaries: int = 0

    def for_device(self, profile: DeviceProfile) -> MemoryModel:
        """This model with the device's own runtime workspace, when its profile gives one."""
        if profile.workspace_bytes is None or profile.workspace_bytes == self.workspace_bytes:
            return self
        return dataclasses.replace(self, workspace_bytes=profile.workspace_bytes)

    def resident_bytes(self, cost: ModelCost, trainable_fraction: float = 1.0) -> float:
        """Weights, gradients and optimiser state of the trainable part, and the workspace."""
        trainable = cost.param_bytes * trainable_fraction
        return cost.param_bytes + trainable * (self.gradient_copies + self.optimizer_slots) + self.workspace_bytes

    def step_bytes(self, cost: ModelCost) -> float:
        """The optimiser step's temporaries (for the largest parameter tensor)."""
        return float(self.step_temporaries * cost.largest_param_bytes)

    def peak_bytes(self, cost: ModelCost, micro_batch: int, trainable_fraction: float = 1.0) -> int:
        """Predicted peak training memory for one micro-batch size.

        Args:
            cost: the measured model.
            micro_batch: samples per forward/backward pass (≥1).
            trainable_fraction: share of parameters that get gradients and optimiser state.
        """
        activations = step_activation_bytes(cost, micro_batch)
        return int(self.resident_bytes(cost, trainable_fraction) + max(activations, self.step_bytes(cost)))

    def max_micro_batch(self, cost: ModelCost, free_bytes: int, cap: int = 4096) -> int:
        """Largest micro-batch whose peak fits ``free_bytes`` (0 if even one sample does not)."""
        if self.peak_bytes(cost, 1) > free_bytes:
            return 0
        if cost.peak_bytes_per_sample <= 0:
            return cap
        room = free_bytes - self.resident_bytes(cost) - cost.activation_fixed_bytes
        micro = max(1, min(cap, int(room // cost.peak_bytes_per_sample)))
        while micro < cap and self.peak_bytes(cost, micro + 1) <= free_bytes:  # the peak is rounded down
            micro += 1
        return micro
