"""Memory model: the peak bytes a training plan needs on a device.

``peak = weights + gradients + optimiser state (of the trainable part)
       + (activation + backward-transient bytes per sample) × micro-batch
       + fixed activations + workspace``

The backward-transient term (gradient buffers alive during backward, see
:class:`~fedfit.cost.profile.ModelCost`) was added after ``bench/memory_model.py`` measured
peak RSS 30-40 % above the saved-activation-only prediction at large CNN batches.

The activation terms come from :func:`fedfit.cost.profile.measure` (saved-tensor hooks on the
real module), so the model follows whatever architecture and width is trained. A task whose
peak exceeds the device's free memory at that virtual moment crashes out of memory.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from fedfit.cost.profile import ModelCost
from fedfit.types import DeviceProfile


@dataclass(frozen=True, slots=True)
class MemoryModel:
    """Parameters of the peak-memory formula.

    Attributes:
        optimizer_slots: optimiser state tensors per trainable parameter (SGD 0,
            SGD with momentum 1, Adam 2).
        workspace_bytes: fixed runtime workspace (allocator slack, kernels' scratch).
        gradient_copies: gradient buffers per trainable parameter (1; 2 with accumulation
            buffers kept separately).
    """

    optimizer_slots: int = 0
    workspace_bytes: int = 256 * 1024
    gradient_copies: int = 1

    def for_device(self, profile: DeviceProfile) -> MemoryModel:
        """This model with the device's own runtime workspace, when its profile gives one."""
        if profile.workspace_bytes is None or profile.workspace_bytes == self.workspace_bytes:
            return self
        return dataclasses.replace(self, workspace_bytes=profile.workspace_bytes)

    def peak_bytes(self, cost: ModelCost, micro_batch: int, trainable_fraction: float = 1.0) -> int:
        """Predicted peak training memory for one micro-batch size.

        Args:
            cost: the measured model.
            micro_batch: samples per forward/backward pass (≥1).
            trainable_fraction: share of parameters that get gradients and optimiser state.
        """
        trainable = cost.param_bytes * trainable_fraction
        state = trainable * (self.gradient_copies + self.optimizer_slots)
        per_sample = cost.activation_bytes_per_sample + cost.backward_transient_bytes_per_sample
        activations = per_sample * micro_batch + cost.activation_fixed_bytes
        return int(cost.param_bytes + state + activations + self.workspace_bytes)

    def max_micro_batch(self, cost: ModelCost, free_bytes: int, cap: int = 4096) -> int:
        """Largest micro-batch whose peak fits ``free_bytes`` (0 if even one sample does not)."""
        fixed = self.peak_bytes(cost, 0)
        per_sample = cost.activation_bytes_per_sample + cost.backward_transient_bytes_per_sample
        if free_bytes < fixed or per_sample <= 0:
            return 0 if free_bytes < fixed else cap
        return min(cap, int((free_bytes - fixed) // per_sample))
