"""DYNAMITE's probes in the cost model (:mod:`fedfit.cost.probe_work`): the charge against figures
worked out by hand, a probing task costing exactly the stated extra over a plain one in time and
energy, and DYNAMITE's planner pricing its rounds with the same charge."""

from __future__ import annotations

import dataclasses

import pytest

from fedfit.cost import MemoryModel, ModelCost, task_cost
from fedfit.cost.probe_work import HVP_PASSES, curvature_samples, probe_samples, probe_units
from fedfit.cost.task_costs import task_costs
from fedfit.devices.catalogue import tier
from fedfit.policy.dynamite.costs import device_cost
from fedfit.types import DeviceState, Link, TaskCost, Thermal, TrainPlan

COST = ModelCost(7850, 31400, 47100.0, 15700.0, 40.0, 0.0)
PHONE = tier("midrange_phone")  # 8e10 FLOP/s, utilisation peak 0.1, half-saturation batch h = 6
STATE = DeviceState(2**30, 0.5, False, 30.0, Thermal.WARM, Link.WIFI, 4e7, True)
#: seconds per sample at full utilisation: 47,100 FLOPs / (8e10 · 0.1 · 0.8 warm)
A = 47100.0 / (8e10 * 0.1 * 0.8)


def _priced(plan: TrainPlan, examples: int = 100) -> TaskCost:
    return task_cost(plan=plan, profile=PHONE, state=STATE, cost=COST, memory=MemoryModel(), num_examples=examples,
                     bytes_down=1000, bytes_up=1000)


def _plan(batch: int = 16, *, sigma: bool, curvature: bool = False) -> TrainPlan:
    return TrainPlan(0, 0, batch, local_epochs=3, max_steps=5, sigma_probe=sigma, curvature_probe=curvature)


def test_the_units_are_each_calls_samples_plus_the_half_saturation_batch() -> None:
    assert HVP_PASSES == 3.0
    # σ²: halves of 8 and 8 → (8 + 6) + (8 + 6); Hessian product over the next 16: 3 · (16 + 6)
    assert probe_units(16, 100, curvature=False, half_batch=6.0) == 28.0
    assert probe_units(16, 100, curvature=True, half_batch=6.0) == 28.0 + 66.0
    # odd batch: halves 3 and 4; 20 samples leave 13 after the first batch of 7
    assert probe_units(7, 20, curvature=True, half_batch=2.0) == (3 + 2) + (4 + 2) + 3 * (7 + 2)
    # the next batch is what the data has left (4 of 20), or the first batch itself when none is left
    assert curvature_samples(16, 20) == 4 and curvature_samples(16, 16) == 16 and curvature_samples(16, 10) == 10
    assert probe_units(16, 20, curvature=True, half_batch=6.0) == 28.0 + 3 * (4 + 6)
    assert probe_samples(16, 20, curvature=True) == 16 + 3 * 4
    # nothing to split: the trainer runs no probe, so none is charged
    for batch, examples in ((1, 100), (2, 1)):
        assert probe_units(batch, examples, curvature=True, half_batch=6.0) == 0.0
        assert probe_samples(batch, examples, curvature=True) == 0.0


def test_a_probing_task_costs_exactly_the_stated_extra_in_time_and_energy() -> None:
    plain = _priced(_plan(sigma=False))
    assert plain.compute_s == pytest.approx(A * 5 * (16 + 6), rel=1e-12)  # five steps of 16
    for curvature, units, samples in ((False, 28.0, 16.0), (True, 94.0, 16.0 + 3 * 16)):
        probed = _priced(_plan(sigma=True, curvature=curvature))
        extra_s = A * units
        assert probed.compute_s - plain.compute_s == pytest.approx(extra_s, rel=1e-9)
        assert probed.duration_s - plain.duration_s == pytest.approx(extra_s, rel=1e-9)
        assert probed.energy_j - plain.energy_j == pytest.approx(PHONE.compute_power_w * extra_s, rel=1e-9)
        assert probed.flops - plain.flops == pytest.approx(47100.0 * samples, rel=1e-12)
        assert (probed.download_s, probed.upload_s, probed.peak_memory_bytes) == (
            plain.download_s, plain.upload_s, plain.peak_memory_bytes)
    # the curvature probe is charged only with the σ² probe it rides on, as the trainer runs it
    assert _priced(_plan(sigma=False, curvature=True)) == plain


def test_the_charge_is_the_same_priced_one_by_one_or_for_a_round() -> None:
    plans = [_plan(sigma=False), _plan(sigma=True), _plan(sigma=True, curvature=True)]
    got = task_costs(plans, [PHONE] * 3, [STATE] * 3, lambda w: COST, MemoryModel(), [100] * 3, [1000] * 3)
    assert got == [_priced(p) for p in plans]


def test_dynamite_prices_its_rounds_with_the_task_cost_models_charge() -> None:
    plain = device_cost(PHONE, STATE, COST, MemoryModel(), data_size=100, payload_bytes=1000)
    for curvature in (False, True):
        probing = device_cost(PHONE, STATE, COST, MemoryModel(), data_size=100, payload_bytes=1000,
                              probes=(True, curvature))
        task_extra = _priced(_plan(sigma=True, curvature=curvature)).compute_s - _priced(_plan(sigma=False)).compute_s
        assert probing.round_s(5, 16) - plain.round_s(5, 16) == pytest.approx(task_extra, rel=1e-9)
        assert probing.round_j(5, 16) - plain.round_j(5, 16) == pytest.approx(PHONE.compute_power_w * task_extra,
                                                                             rel=1e-9)
    # a batch above the memory cap accumulates: the probe takes the whole effective batch
    capped = dataclasses.replace(plain, micro_cap=8, sigma_probe=True, curvature_probe=True)
    assert capped.probe_s(12) == pytest.approx(plain.sample_s * probe_units(16, 100, curvature=True, half_batch=6.0))
    assert dataclasses.replace(plain, curvature_probe=True).probe_s(16) == 0.0  # no σ² probe: none


def test_the_planner_prices_the_probes_its_plans_ask_for() -> None:
    from tests.helpers import profile, state
    from tests.policy.dynamite.test_reachable import fleet_planner

    p = fleet_planner(offline=set())
    for sigma, model, expected in ((True, "curvature", (True, True)), (True, "reshuffled", (True, False)),
                                   (False, "curvature", (False, False))):
        p.settings = dataclasses.replace(p.settings, sigma_probe=sigma, noise_model=model)
        plan, device = p.plan(0, 0, profile(), state()), p._device(0, 40)
        assert (plan.sigma_probe, plan.curvature_probe) == expected == (device.sigma_probe, device.curvature_probe)
    p.settings = dataclasses.replace(p.settings, sigma_probe=True, adapt=False, warmup_rounds=1)
    p.observed = 1  # an offline plan, fixed after its warm-up: no more probes, none priced
    assert not p.plan(0, 1, profile(), state()).sigma_probe and not p._device(0, 40).sigma_probe
