"""FLOPs and payload bytes of a plan's memory-saving techniques (pure arithmetic; the terms and
formulas are in :mod:`fedfit.cost.techniques`)."""

from __future__ import annotations

from fedfit.cost.profile import ModelCost
from fedfit.cost.stages import BYTES_PER_FLOAT
from fedfit.cost.techniques import aux_head_params, first_trained_stage, trained_stages
from fedfit.types import Techniques, TrainPlan


#: FLOPs of one fake-quantisation (scale, round, clamp, rescale, straight-through add).
QAT_FLOPS_PER_ELEMENT = 6


def _layered_flops(t: Techniques, cost: ModelCost, samples: int, steps: int) -> float:
    st, f, n = cost.stages, first_trained_stage(t, cost.stages), len(cost.stages)
    per_sample = sum(s.forward_flops for s in st) + sum(s.backward_flops for s in st[f:])
    if t.checkpointing:
        per_sample += sum(s.forward_flops for s in st[f:n - 1])
    flops = per_sample * samples
    if t.qat_bits is not None:
        elements = sum(s.output_bytes for s in st) / BYTES_PER_FLOAT
        flops += QAT_FLOPS_PER_ELEMENT * (elements * samples + cost.num_params * steps)
    return flops


def plan_flops(cost: ModelCost, plan: TrainPlan, samples: int, steps: int) -> tuple[float, float]:
    """(device FLOPs, edge-server FLOPs) of a task processing ``samples`` in ``steps``."""
    t, st = plan.techniques, cost.stages
    if not t.active or not st or t.keep_fraction is not None or t.sparsity is not None:
        return cost.train_flops_per_sample * samples, 0.0
    if t.split_cut is not None:
        per = [s.forward_flops + s.backward_flops for s in st]
        return sum(per[: t.split_cut]) * samples, sum(per[t.split_cut:]) * samples
    if t.progressive_stage is not None:
        k = t.progressive_stage
        head = 3 * 2 * aux_head_params(st, k)
        return (sum(s.forward_flops for s in st[: k + 1]) + st[k].backward_flops + head) * samples, 0.0
    probe = cost.train_flops_per_sample * plan.micro_batch if t.importance_k is not None else 0.0
    return _layered_flops(t, cost, samples, steps) + probe, 0.0


def plan_payload_bytes(cost: ModelCost, plan: TrainPlan, full_bytes: int) -> tuple[int, int]:
    """(bytes down, bytes up) of the model payload; ``full_bytes`` is the whole model's."""
    t, st = plan.techniques, cost.stages
    if not t.active or not st:
        return full_bytes, full_bytes
    if t.keep_fraction is not None:  # the mask is re-derived from (seed, device, round)
        return full_bytes, int(t.keep_fraction * cost.num_params) * BYTES_PER_FLOAT
    if t.sparsity is not None:
        sparse = sparse_payload_bytes(cost.num_params, 1.0 - t.sparsity)
        return sparse, sparse
    if t.progressive_stage is not None:
        k = t.progressive_stage
        return sum(s.param_bytes for s in st[: k + 1]), st[k].param_bytes
    if t.split_cut is not None:
        held = sum(s.param_bytes for s in st[: t.split_cut])
        return held, held
    return full_bytes, sum(st[i].param_bytes for i in trained_stages(t, st))


def sparse_payload_bytes(num_elements: int, kept_fraction: float) -> int:
    """Bytes of the sparse encoding: a bitmap of the elements plus the kept float32 values."""
    return (num_elements + 7) // 8 + int(round(kept_fraction * num_elements)) * BYTES_PER_FLOAT


def activation_traffic_bytes(cost: ModelCost, plan: TrainPlan, samples: int) -> int:
    """Bytes of activations sent (and of gradients received) under split learning, each way."""
    cut = plan.techniques.split_cut
    return 0 if cut is None or not cost.stages else int(cost.stages[cut - 1].output_bytes * samples)
