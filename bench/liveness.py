"""Liveness: the issue's FedBuff hang, and a fleet that can never train, each run to its end.

Scenario A: FedBuff K = 10 at fixed batch 32 on digits/CNN with 3 flagship phones and 8 sensor
MCUs (which cannot fit batch 32): fewer than K devices can ever deliver from one version.
Before the liveness change (commit 6db7946) this run never finished a version. Scenario B: the
same on sensors alone: no device can train, so the run must stop on its stall timeout.
Scenario C: sync readiness-first selection with dynamic batching on phones, watches and
sensors, without and with the tier floor (``selection.tier_floor`` 0 and 0.25).
Prints versions, virtual time, participation per tier and the stop reason; virtual figures are
deterministic.

    PYTHONPATH=src python bench/liveness.py
"""

from __future__ import annotations

import time
from typing import Any

from fedfit.config import parse_config
from fedfit.runner import run

BASE: dict[str, Any] = {
    "seed": 0, "data": {"dataset": "digits", "max_test_samples": 300}, "model": {"name": "cnn"},
    "training": {"batch_size": 32},
    "orchestration": {"mode": "async", "rounds": 10},
    "asynchronous": {"algorithm": "fedbuff", "buffer_size": 10},
    "output": {"plots": False, "progress": False, "checkpoint_every": 0},
}
SCENARIOS = {"A: 3 phones + 8 sensors, K=10": {"flagship_phone": 3, "sensor_mcu": 8},
             "B: 8 sensors only, K=10": {"sensor_mcu": 8}}


FLOOR: dict[str, Any] = {
    **BASE, "fleet": {"tiers": {"flagship_phone": 6, "older_phone": 6, "smartwatch": 4, "sensor_mcu": 4},
              "catalogue": "scaled"},
    "batching": {"mode": "dynamic", "selection": "readiness"},
    "orchestration": {"mode": "sync", "rounds": 10, "clients_per_round": 5},
}


def floor_scenario() -> None:
    for floor in (0.0, 0.25):
        s = run(parse_config({**FLOOR, "selection": {"tier_floor": floor}})).summary
        part = {t: round(v, 2) for t, v in s["participation_by_tier"].items()}
        print(f"== C: sync readiness-first, tier_floor {floor}")
        print(f"  invited {s['invited_by_tier']}  never invited {s['never_invited']}")
        print(f"  participation {part}  virtual time {s['virtual_time_s']:.0f} s  "
              f"final accuracy {s['final_accuracy']:.3f}")


def main() -> None:
    floor_scenario()
    for name, tiers in SCENARIOS.items():
        t0 = time.perf_counter()
        result = run(parse_config({**BASE, "fleet": {"tiers": tiers, "catalogue": "scaled"}}))
        s = result.summary
        per_version = [sum(r.participants_by_tier.values()) for r in result.reports]
        print(f"== {name}  (wall {time.perf_counter() - t0:.0f} s)")
        print(f"  versions {s['rounds']} of 10, updates per version {per_version}, "
              f"virtual time {s['virtual_time_s']:.0f} s, final accuracy {s['final_accuracy']}")
        print(f"  invited {s['invited_by_tier']}  participation {s['participation_by_tier']}")
        print(f"  failures {s['failures_by_cause']}  stopped: {s['stopped']}")


if __name__ == "__main__":
    main()
