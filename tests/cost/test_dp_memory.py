"""DP-SGD's per-sample gradients in the memory model: m × parameter bytes more, smaller batches fit."""

from __future__ import annotations

from fedfit.cost import MemoryModel
from fedfit.cost.dp_memory import per_sample_gradient_costs, with_per_sample_gradients
from fedfit.cost.profile import ModelCost

COST = ModelCost(num_params=250_000, param_bytes=1_000_000, train_flops_per_sample=1e6,
                 forward_flops_per_sample=3e5, activation_bytes_per_sample=200_000, activation_fixed_bytes=0.0,
                 backward_transient_bytes_per_sample=100_000)


def test_peak_grows_by_one_parameter_copy_per_sample() -> None:
    memory = MemoryModel()
    plain, dp = memory.peak_bytes(COST, 32), memory.peak_bytes(with_per_sample_gradients(COST), 32)
    assert dp - plain == 32 * 1_000_000


def test_the_largest_micro_batch_shrinks_to_what_the_gradients_leave() -> None:
    memory = MemoryModel()
    free = memory.peak_bytes(COST, 64)  # exactly 64 samples fit without DP
    # with DP each sample costs 0.3 MB + 1 MB: (free − fixed) / 1.3 MB samples fit
    fixed = memory.peak_bytes(COST, 0)
    assert memory.max_micro_batch(COST, free) == 64
    assert memory.max_micro_batch(with_per_sample_gradients(COST), free) == (free - fixed) // 1_300_000


def test_every_width_is_charged() -> None:
    costs = per_sample_gradient_costs(lambda width: COST)
    assert costs(0.5).backward_transient_bytes_per_sample == 1_100_000
