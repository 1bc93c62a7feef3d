"""auto's revision from measured durations, against hand-computed cases."""

from __future__ import annotations

import math

import pytest

from fedfit.autorevise import AutoReviser
from fedfit.devices.registry import DeviceHistory, Registry, RegistryEntry, UpdateRecord
from fedfit.policy.auto_revision import Observed, durations, revise
from tests.helpers import profile


def test_unmeasured_devices_are_scaled_by_the_measured_bias() -> None:
    times, bias = durations([Observed(1.0, 2.0), Observed(2.0, 8.0), Observed(3.0, 9.0), Observed(5.0)])
    assert bias == pytest.approx(3.0)  # median of 2, 4, 3
    assert times == pytest.approx([2.0, 8.0, 9.0, 15.0])


def test_a_cut_task_lasted_at_least_until_the_cut() -> None:
    times, bias = durations([Observed(2.0, cut_s=5.0), Observed(2.0, 1.0, cut_s=0.5), Observed(math.inf)])
    assert bias == pytest.approx(0.5) and times[:2] == pytest.approx([5.0, 1.0]) and math.isinf(times[2])


def test_revise_recomputes_deadline_and_over_selection() -> None:
    observed = [Observed(1.0, 2.0), Observed(1.0, 4.0), Observed(1.0, 2.0), Observed(1.0, 20.0), Observed(math.inf)]
    rev = revise(observed, clients_per_round=2, buffer_size=1)
    # measured (2, 4, 2, 20): p75 = 4 + 0.25 × 16 = 8, deadline 10; 3 of 5 on time: over 2/3
    assert rev.deadline_s == pytest.approx(10.0) and rev.over_selection == pytest.approx(0.667)
    assert rev.measured == 4 and rev.bias == pytest.approx(3.0)


def test_the_verdict_reads_the_label_skews() -> None:
    # measured 1 s and 3 s, k = 1, buffer 1: deadline 1.25 × 2.5, both on time; sync 1 update per
    # E[T] = 2 s: 0.5/s. FedBuff (V = 0.75 s, staleness 1 and 4): 0.86/s; with the fast device's
    # labels 0.99 skewed its 1 version counts as ⌊1 / 0.1⌋ = 10: 11^-½ + 5^-½ / 3 = 0.45/s
    observed = [Observed(1.0, 1.0), Observed(3.0, 3.0)]
    assert revise(observed, clients_per_round=1, buffer_size=1).mode == "async"
    assert revise(observed, clients_per_round=1, buffer_size=1, skews=[0.99, 0.0]).mode == "sync"


def _registry(updates: list[float | None]) -> Registry:
    registry = Registry()
    registry.restore(tuple(
        RegistryEntry(i, profile(), None, None,
                      DeviceHistory(last_update=None if t is None else UpdateRecord(0, t, 10, 1.0)))
        for i, t in enumerate(updates)))
    return registry


def test_reviser_waits_then_reads_the_registry() -> None:
    reviser = AutoReviser([1.0, 1.0, 1.0, 1.0], clients_per_round=2, buffer_size=1, async_advantage=1.0, after=2)
    registry = _registry([2.0, 2.0, None, None])
    assert reviser(1, registry) is None  # before round 2: the configured deadline
    # bias 2: every device 2 s; deadline 2.5, everybody on time
    assert reviser(2, registry) == pytest.approx((2.5, 0.0))
    assert len(reviser.log) == 1 and "deadline 2.50 s" in reviser.log[0]
    reviser(3, registry)
    assert len(reviser.log) == 1  # unchanged: not logged again
