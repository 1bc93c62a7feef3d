"""The batch policy encodes seed 000's numbers and never plans past free memory."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedfit.cost import MemoryModel, measure
from fedfit.devices import TIERS
from fedfit.models import ModelSpec
from fedfit.policy.batching import BatchingRules, decide_batch, initial_batch
from fedfit.types import BatchRule, Link, Thermal
from tests.helpers import state

CNN = measure(ModelSpec("cnn", (1, 28, 28), 10))
MEMORY = MemoryModel()


TYPICAL_FREE_SHARE = 0.78  # the calibration point: 25th percentile of the traces' app pressure


def _idle(tier: str, **overrides: object):
    """A phone at typical app pressure (78% of its training budget free), charged, cool, on Wi-Fi."""
    free = int(TIERS[tier].training_memory_bytes * TYPICAL_FREE_SHARE)
    return state(**{"free_memory_bytes": free, "battery_fraction": 0.9, **overrides})


def _fits(free_bytes: int, margin: float) -> int:
    """Largest b with fixed + b·(act + transient) ≤ free·(1 − margin), by the memory formula."""
    fixed = CNN.param_bytes * 2 + CNN.activation_fixed_bytes + MEMORY.workspace_bytes
    per_sample = CNN.activation_bytes_per_sample + CNN.backward_transient_bytes_per_sample
    return int((free_bytes * (1 - margin) - fixed) // per_sample)


@pytest.mark.parametrize("tier, batch", [("flagship_phone", 32), ("midrange_phone", 16), ("older_phone", 8)])
def test_seed_phone_batches(tier: str, batch: int) -> None:
    d = decide_batch(TIERS[tier], _idle(tier), CNN, MEMORY)
    assert (d.micro_batch, d.accumulation_steps, d.declined) == (batch, 1, False)


def test_older_phone_under_app_pressure_uses_8_or_4() -> None:
    for free_share in (0.65, 0.7, 0.75, 0.78):
        s = state(free_memory_bytes=int(TIERS["older_phone"].training_memory_bytes * free_share))
        d = decide_batch(TIERS["older_phone"], s, CNN, MEMORY)
        assert 4 <= d.micro_batch <= 8 and d.effective_batch >= 4


def test_memory_rule_is_the_largest_fitting_micro_batch() -> None:
    free = 3_500_000
    d = decide_batch(TIERS["older_phone"], state(free_memory_bytes=free), CNN, MEMORY)
    margin = CNN.memory_error  # the default margin: the model's measured error (0 for the CNN)
    assert d.micro_batch == _fits(free, margin) and d.bound_by is BatchRule.MEMORY
    assert MEMORY.peak_bytes(CNN, d.micro_batch + 1) > free * (1 - margin) >= d.predicted_peak_bytes


def test_low_battery_gives_micro_batch_one_with_accumulation_and_less_work() -> None:
    s = _idle("flagship_phone", battery_fraction=0.15)
    d = decide_batch(TIERS["flagship_phone"], s, CNN, MEMORY)
    assert (d.micro_batch, d.accumulation_steps, d.effective_batch) == (1, 4, 4)
    assert d.bound_by is BatchRule.BATTERY and d.work_fraction == 0.5


def test_charging_lifts_the_battery_limit() -> None:
    d = decide_batch(TIERS["flagship_phone"], _idle("flagship_phone", battery_fraction=0.15, charging=True),
                     CNN, MEMORY)
    assert d.micro_batch == 32 and d.work_fraction == 1.0


def test_standard_size_at_80_percent_and_mid_band_scale() -> None:
    rules = BatchingRules(mid_battery_scale=0.5)
    full = decide_batch(TIERS["flagship_phone"], _idle("flagship_phone", battery_fraction=0.8), CNN, MEMORY, rules)
    mid = decide_batch(TIERS["flagship_phone"], _idle("flagship_phone", battery_fraction=0.5), CNN, MEMORY, rules)
    assert (full.micro_batch, mid.micro_batch, mid.bound_by) == (32, 16, BatchRule.BATTERY)


def test_hot_declines_with_reason_and_warm_halves() -> None:
    hot = decide_batch(TIERS["smartwatch"], state(thermal=Thermal.HOT, temperature_c=44.0), CNN, MEMORY)
    warm = decide_batch(TIERS["flagship_phone"], _idle("flagship_phone", thermal=Thermal.WARM), CNN, MEMORY)
    assert hot.declined and hot.bound_by is BatchRule.THERMAL and hot.reason.startswith("thermal")
    assert (warm.micro_batch, warm.bound_by) == (16, BatchRule.THERMAL)


def test_nothing_fits_declines_for_memory() -> None:
    d = decide_batch(TIERS["sensor_mcu"], state(free_memory_bytes=384 * 1024), CNN, MEMORY)
    assert d.declined and d.bound_by is BatchRule.MEMORY and d.reason.startswith("memory")


def test_compute_rule_caps_at_the_utilisation_target() -> None:
    # vehicle: half_batch 16; b/(b+16) >= 0.9 first at b = 144; the standard batch is raised to 256
    rules = BatchingRules(standard_batch=256, throughput_target=0.9)
    s = state(free_memory_bytes=64 * 2**20)
    d = decide_batch(TIERS["vehicle_computer"], s, CNN, MEMORY, rules)
    assert (d.micro_batch, d.bound_by) == (144, BatchRule.COMPUTE)
    busy = decide_batch(TIERS["vehicle_computer"], state(free_memory_bytes=64 * 2**20, cpu_utilisation=0.95),
                        CNN, MEMORY, rules)
    assert busy.micro_batch == 72


def test_energy_per_sample_falls_with_the_batch() -> None:
    p = TIERS["midrange_phone"]
    small = decide_batch(p, _idle("midrange_phone", battery_fraction=0.1), CNN, MEMORY)
    large = decide_batch(p, _idle("midrange_phone"), CNN, MEMORY)
    expected = p.compute_power_w * CNN.train_flops_per_sample / (p.flops_per_s * 0.1 * 16 / 22)
    assert large.energy_per_sample_j == pytest.approx(expected) and small.energy_per_sample_j > large.energy_per_sample_j


def test_connectivity_strong_wifi_richer_update_poor_cellular_smaller() -> None:
    rules = BatchingRules(strong_wifi_bps=50e6, wifi_batch_scale=2.0, wifi_epochs=3, poor_link_bps=1e6)
    p, free = TIERS["vehicle_computer"], 64 * 2**20
    depot = decide_batch(p, state(free_memory_bytes=free, link=Link.WIFI, bandwidth_bps=80e6), CNN, MEMORY, rules)
    road = decide_batch(p, state(free_memory_bytes=free, link=Link.CELLULAR, bandwidth_bps=0.5e6), CNN, MEMORY, rules)
    assert (depot.micro_batch, depot.epochs_scale, depot.work_fraction) == (64, 3, 1.0)
    assert (road.micro_batch, road.epochs_scale, road.work_fraction) == (16, 1, 0.5)
    assert road.bound_by is BatchRule.CONNECTIVITY


def test_target_effective_batch_by_accumulation() -> None:
    d = decide_batch(TIERS["older_phone"], _idle("older_phone"), CNN, MEMORY, BatchingRules(target_effective_batch=32))
    assert (d.micro_batch, d.accumulation_steps) == (8, 4)


def test_initial_suggestion_from_profile() -> None:
    tiers = ("flagship_phone", "midrange_phone", "older_phone")
    # the whole budget free, no margin (the CNN's measured error is 0): the memory bound, capped at 32
    expected = [min(32, _fits(TIERS[t].training_memory_bytes, CNN.memory_error)) for t in tiers]
    assert [initial_batch(TIERS[t], CNN, MEMORY) for t in tiers] == expected == [32, 24, 14]


_states = st.builds(
    state,
    free_memory_bytes=st.integers(0, 64 * 2**20),
    battery_fraction=st.one_of(st.none(), st.floats(0.0, 1.0)),
    charging=st.one_of(st.none(), st.booleans()),
    thermal=st.sampled_from(list(Thermal)),
    link=st.sampled_from(list(Link)),
    bandwidth_bps=st.floats(0.0, 2e8),
    cpu_utilisation=st.one_of(st.none(), st.floats(0.0, 1.0)),
)
_rules = st.builds(BatchingRules, standard_batch=st.integers(1, 256), memory_margin=st.one_of(st.none(), st.floats(0.0, 0.5)),
                   min_effective_batch=st.integers(1, 64), strong_wifi_bps=st.floats(1e6, 1e8),
                   wifi_batch_scale=st.floats(1.0, 4.0), poor_link_bps=st.floats(0.0, 5e6))


@settings(max_examples=1000, deadline=None)
@given(tier=st.sampled_from(sorted(TIERS)), s=_states, rules=_rules)
def test_no_plan_exceeds_free_memory(tier: str, s, rules: BatchingRules) -> None:
    d = decide_batch(TIERS[tier], s, CNN, MEMORY, rules)
    if d.declined:
        assert d.micro_batch == 0
        return
    margin = CNN.memory_error if rules.memory_margin is None else rules.memory_margin
    assert MEMORY.for_device(TIERS[tier]).peak_bytes(CNN, d.micro_batch) <= s.free_memory_bytes * (1 - margin)
    assert d.micro_batch >= 1 and d.effective_batch >= rules.min_effective_batch
    assert math.ceil(rules.min_effective_batch / d.micro_batch) == d.accumulation_steps
