"""Straggler tolerance: sync FedAvg vs deadline/over-selection, FedBuff, FedAsync, FedNova, full stack.

All strategies run on the same mixed fleet (every tier), data and seed, in this one process, from
``examples/stragglers.yaml`` (its ``strategies:`` section holds each one's overrides, so the same
runs are ``fedfit compare examples/stragglers.yaml --strategy NAME ...``). Prints virtual time to
the target accuracy, speed-up over the synchronous baselines, final accuracy, participation per
tier (updates / invitations) and each tier's accuracy on its own devices' local test data.

    .venv/bin/python bench/stragglers.py [--config examples/stragglers.yaml] [--strategy NAME ...]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from fedfit.config import load_config
from fedfit.runner import run
from fedfit.strategies import apply_strategy

DEFAULT = ("sync-fixed32", "sync-all", "sync-deadline", "sync-oort", "fedbuff", "fedasync", "hetero-fedavg", "fednova",
           "async-selection", "full-stack")
TIER_SHORT = {"flagship_phone": "flag", "midrange_phone": "mid", "older_phone": "old", "tablet": "tab",
              "smartwatch": "watch", "sensor_mcu": "mcu", "vehicle_computer": "car", "fleet": "fleet"}


def _minutes(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds / 60:6.2f}"


def _speedup(base: float | None, mine: float | None) -> str:
    return "—" if base is None or mine is None else f"{base / mine:5.2f}×"


def _tiers(values: dict[str, Any], fmt: str) -> str:
    return " ".join(f"{TIER_SHORT.get(t, t)} {format(v, fmt)}" for t, v in values.items())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="examples/stragglers.yaml")
    p.add_argument("--strategy", action="append", help="strategy names (default: all ten)")
    args = p.parse_args()
    base = load_config(args.config)
    summaries: dict[str, dict[str, Any]] = {}
    for name in args.strategy or DEFAULT:
        t0 = time.perf_counter()
        summaries[name] = run(apply_strategy(base, name)).summary
        print(f"[{name}: {time.perf_counter() - t0:.0f} s wall]", flush=True)
    ref32 = summaries.get("sync-fixed32", {}).get("time_to_target_s")
    ref8 = summaries.get("sync-all", {}).get("time_to_target_s")
    print(f"\ntarget accuracy {base.evaluation.target_accuracy:.2f}; times on the virtual clock in minutes")
    print(f"{'strategy':14} {'to target':>9} {'vs sync32':>9} {'vs sync8':>8} {'final':>6} {'gap':>5}  virtual")
    for name, s in summaries.items():
        gap = s["worst_tier_gap"]
        print(f"{name:14} {_minutes(s['time_to_target_s']):>9} {_speedup(ref32, s['time_to_target_s']):>9} "
              f"{_speedup(ref8, s['time_to_target_s']):>8} {s['final_accuracy']:6.3f} "
              f"{'—' if gap is None else f'{gap * 100:4.1f}':>5}  {_minutes(s['virtual_time_s'])}")
    print("\nparticipation per tier (updates / invitations) and failures")
    for name, s in summaries.items():
        print(f"{name:14} {_tiers(s['participation_by_tier'], '.0%')}   failures {s['failures_by_cause']}")
    print("\naccuracy of the final model on each tier's own devices' local test data")
    for name, s in summaries.items():
        print(f"{name:14} {_tiers(s['local_accuracy_by_tier'], '.3f')}")


if __name__ == "__main__":
    main()
