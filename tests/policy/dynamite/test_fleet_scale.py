"""A heterogeneous re-plan's work against the fleet's size, counted (never timed).

Ten times the devices (the same four kinds of device, repeated): the expensive noise evaluation
(``contracted_variances``, a loop over a task's epochs) is taken once per distinct (data size,
batch, τ), so its count does not change (one evaluation per device and score, as before dyn14r,
gives ten times as many: 45,760 against 4,576); and the per-device cost-model calls
(``DeviceCost`` methods) grow at most about ten times.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from fedfit.policy.dynamite import curvature, sampling
from fedfit.policy.dynamite.bound import Budget, Estimates
from fedfit.policy.dynamite.costs import DeviceCost
from fedfit.policy.dynamite.search import assign_heterogeneous
from fedfit.policy.dynamite.slack import slack_filled

KINDS = [  # (seconds per sample, half batch, link seconds, micro cap, data size)
    (0.002, 4.0, 1.0, 32, 60), (0.004, 2.0, 3.0, 16, 120), (0.001, 8.0, 0.5, 64, 40), (0.003, 4.0, 2.0, 8, 90)]
EST = Estimates(beta=1.0, rho=1.0, delta=1.0, sigma2=1.0, loss=2.3)


def fleet(n: int) -> list[DeviceCost]:
    return [DeviceCost(a, h, c, 2.0, 1.0, micro_cap=m, data_size=d, contraction=0.95, sigma_probe=True)
            for a, h, c, m, d in (KINDS[i % len(KINDS)] for i in range(n))]


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    yield install_counters(monkeypatch)


def install_counters(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count ``contracted_variances`` and the per-device cost-model calls (``DeviceCost`` methods)."""
    seen = {"variances": 0, "device": 0}
    variances = curvature.contracted_variances

    def counted_variances(*args: float) -> tuple[float, float, float]:
        seen["variances"] += 1
        return variances(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(curvature, "contracted_variances", counted_variances)
    for name in ("round_s", "round_j", "noise", "step_s", "probe_s"):
        method = getattr(DeviceCost, name)

        def counted(self: DeviceCost, *args: float, _m=method) -> float:  # type: ignore[no-untyped-def]
            seen["device"] += 1
            return float(_m(self, *args))

        monkeypatch.setattr(DeviceCost, name, counted)
    return seen


def plan_work(n: int, seen: dict[str, int]) -> tuple[int, int]:
    """(noise evaluations, per-device cost calls) of one heterogeneous re-plan with its slack fill."""
    for cached in (getattr(curvature.contracted_noise, "cache_clear", None),
                   getattr(sampling.step_noise, "cache_clear", None)):
        if cached is not None:
            cached()
    seen["variances"] = seen["device"] = 0
    devices = fleet(n)
    shares = [1 / n] * n
    budget = Budget(time_s=200.0)
    found = assign_heterogeneous(devices, shares, EST, 0.05, budget, 20)
    slack_filled(found, "within_cap", devices, shares, EST, 0.05, budget, energy_cap=True)
    assert found.bound < math.inf
    return seen["variances"], seen["device"]


def test_noise_is_evaluated_per_distinct_device_not_per_device(counts: dict[str, int]) -> None:
    small, _ = plan_work(16, counts)
    large, _ = plan_work(160, counts)
    assert large == small  # the same four data sizes: the same (D, b, τ) to evaluate


def test_per_device_work_grows_at_most_linearly(counts: dict[str, int]) -> None:
    _, small = plan_work(16, counts)
    _, large = plan_work(160, counts)
    assert large <= 10 * small * 1.2  # ten times the devices: at most ~ten times the calls
