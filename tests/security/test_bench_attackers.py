"""bench/security.py's experiment set-up: attackers drawn among the delivering devices, and the
count of malicious updates that reached the aggregator (read from the event log)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "security.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_security", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_attackers_are_a_fraction_of_the_delivering_devices(bench: ModuleType) -> None:
    delivering = [0, 1, 3, 6, 7, 8, 9, 13, 14, 15, 17, 18, 19, 22, 24, 25, 26, 27, 2]  # 19 devices
    for fraction, count in ((0.1, 2), (0.3, 6), (0.5, 10), (0.01, 1)):  # round(f * 19), at least one
        chosen = bench.draw_attackers(delivering, fraction, 1)
        assert len(chosen) == count and len(set(chosen)) == count
        assert set(chosen) <= set(delivering) and chosen == sorted(chosen)
    assert bench.draw_attackers(delivering, 0.3, 1) == bench.draw_attackers(delivering, 0.3, 1)


def test_delivery_counts_only_ok_tasks_of_malicious_devices(bench: ModuleType) -> None:
    events = [{"device": 4, "ok": False}, {"device": 4, "ok": True}, {"device": 4, "ok": True},
              {"device": 9, "ok": True}, {"device": 2, "ok": False}, {"device": 7, "ok": True}]
    # delivered: 4, 4, 9, 7 (device 2 never delivered); malicious {2, 4}: two of them
    assert bench.delivery_counts(events, {2, 4}) == {"delivered": 4, "malicious_delivered": 2,
                                                     "delivering_devices": [4, 7, 9]}
    assert bench.delivery_counts([], {1})["delivered"] == 0
