"""Peak memory of partial-parameter training and pruning as fedfit's trainer runs them
(:mod:`fedfit.training.partial`, :mod:`fedfit.training.pruning`): pure arithmetic on the measured
costs, used by :func:`fedfit.cost.techniques.plan_peak_bytes`. Each phase was read off the tensor
allocator's timeline of the trainer's step (``bench/memory_model.py --technique partial,pruning``).
"""

from __future__ import annotations

from fedfit.cost.memory import MemoryModel
from fedfit.cost.profile import ModelCost
from fedfit.cost.stages import BYTES_PER_FLOAT, phase_fixed
from fedfit.types import TrainPlan


def largest_param_bytes(cost: ModelCost) -> int:
    """Bytes of the largest parameter tensor (from the stages when the cost does not say)."""
    return max([cost.largest_param_bytes, *(s.largest_param * BYTES_PER_FLOAT for s in cost.stages)])


def _gather_bytes(cost: ModelCost, kept: float, micro_batch: int) -> float:
    """Largest moment of gathering a stage's dense gradients into their compact tensors, beyond
    the plain step's fixed term (its workspace is gone then): the stage's dense gradients (its
    backward computes them together: an LSTM's four at once), the int64 index of its largest
    tensor's kept elements (``nonzero`` of the mask: 8 B per kept element and dimension) and
    the activations saved by it and the stages before it (those after it are freed: read off
    the allocator's timeline, ResNet-8's peak is its last block's largest weight's gather)."""
    saved = peak = 0.0
    for s, index in zip(cost.stages, _index_elements(cost), strict=True):
        saved += s.activation_bytes * micro_batch
        peak = max(peak, s.param_bytes + index * kept * 8 + min(saved, cost.activation_bytes_per_sample * micro_batch))
    return peak - cost.activation_fixed_bytes


def _index_elements(cost: ModelCost) -> list[int]:
    """Per stage, the largest elements × dimensions of one of its parameter tensors (the tensors,
    in the model's order, split by the stages' parameter counts); the model's largest for every
    stage when the tensors do not split that way."""
    whole = max((n * d for n, d in cost.param_tensors), default=0)
    out, tensors = [], iter(cost.param_tensors)
    for s in cost.stages:
        left, largest = s.num_params, 0
        while left > 0:
            n, d = next(tensors, (left, 0))
            left, largest = left - n, max(largest, n * d)
        if left < 0:
            return [whole] * len(cost.stages)
        out.append(largest)
    return out if next(tensors, None) is None else [whole] * len(cost.stages)


def _stage_backward_bytes(cost: ModelCost, micro_batch: int) -> float:
    """Largest backward of one stage before its dense gradients are gathered, beyond the plain
    step's fixed term: that stage's dense gradients, its input and its own measured step
    (:attr:`StageCost.recompute_bytes`: an LSTM layer's backward workspace) beside the
    activations saved by the stages before it (read off the allocator's timeline: the LSTM's
    peak is in its last layer's backward, not at the first stage's activations); per sample
    never more than the measured plain step, whose peak is the largest of these moments."""
    b, st = micro_batch, cost.stages
    return max((s.param_bytes + phase_fixed(s.step_fixed_bytes, b)
               + b * min(sum(p.activation_bytes for p in st[:j]) + s.input_bytes + s.recompute_bytes,
                         cost.peak_bytes_per_sample)
               for j, s in enumerate(st)), default=0.0) - cost.activation_fixed_bytes


def _pruned_state_bytes(cost: ModelCost) -> float:
    """What building the pruned state holds beyond the weights and masks: the pruned tensors made
    so far, and for the one being made a zero tensor and the result (tensor by tensor, in the
    model's order); at least the whole pruned state before it is loaded."""
    if not cost.param_tensors:
        return float(cost.param_bytes + largest_param_bytes(cost))
    made, peak = 0, cost.param_bytes
    for n, _ in cost.param_tensors:
        peak = max(peak, made + 2 * n * BYTES_PER_FLOAT)
        made += n * BYTES_PER_FLOAT
    return float(peak)


def masked_peak(memory: MemoryModel, cost: ModelCost, plan: TrainPlan) -> float:
    """Partial training and pruning as fedfit's trainer runs them (:mod:`fedfit.training.partial`):
    the dense weights and a 1-byte mask per element stay; the ``kN`` active elements live in
    compact tensors with their gradients and optimiser state; backward gathers one dense
    gradient at a time, beside the saved activations still alive (or the step's own per-sample
    peak, when larger). The largest of three phases (measured with the tensor allocator):
    backward; the end, where the trained state is copied out beside the compact tensors; and
    for pruning the start, where the pruned weights are built as a whole new state (each
    tensor beside a zero tensor of its size) before they are loaded."""
    t = plan.techniques
    kept = t.keep_fraction if t.keep_fraction is not None else 1.0 - (t.sparsity or 0.0)
    resident = float(cost.param_bytes + cost.num_params)  # dense weights + 1-byte mask
    active = cost.param_bytes * kept
    # a dense gradient is gathered when its layer's backward ends: beside the saved activations
    # still alive then (at most all), not beside the step's backward buffers at their peak
    activations = max(_gather_bytes(cost, kept, plan.micro_batch),
                      cost.peak_bytes_per_sample * plan.micro_batch,
                      _stage_backward_bytes(cost, plan.micro_batch) if plan.micro_batch else 0.0)
    backward = resident + active * (1 + memory.gradient_copies + memory.optimizer_slots) + activations
    end = resident + active * (1 + memory.optimizer_slots) + cost.param_bytes
    start = resident + _pruned_state_bytes(cost) if t.sparsity is not None else 0.0
    return max(backward, end - cost.activation_fixed_bytes, start - cost.activation_fixed_bytes)
