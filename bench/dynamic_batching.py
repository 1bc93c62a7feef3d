"""Fixed batch 32 vs dynamic batching on the photo-app phone fleet, same seed, one process.

Prints, per strategy: out-of-memory failures, participation per tier, the weakest tier's
participation among invitations it did not decline for battery or heat ("part. ex."; the
column after it also leaves out invitations of devices that were offline), mean micro-batch and
effective batch per tier, virtual time to the target accuracy and final accuracy.

    PYTHONPATH=src python bench/dynamic_batching.py [--rounds N] [--config examples/photo_app.yaml]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict
from typing import Any

from fedfit.config import load_config, with_overrides
from fedfit.experiment import built
from fedfit.report.summary import summarise
from fedfit.strategies import apply_strategy
from fedfit.types import Failure, FailureCause, TaskResult

WEAKEST = "older_phone"


def run_strategy(config: Any) -> tuple[dict[str, Any], list[TaskResult]]:
    reports, results = [], []
    with built(config) as exp:
        params = exp.initial_params
        for outcome in exp.orchestrator.rounds(params):
            reports.append(outcome.report)
            results.extend(outcome.results)
            params = outcome.params
    return summarise(reports, config.evaluation.target_accuracy), results


def _declined_for_battery_or_heat(r: TaskResult) -> bool:
    if not isinstance(r.outcome, Failure):
        return False
    return r.outcome.cause is FailureCause.BATTERY or (
        r.outcome.cause is FailureCause.DECLINED and r.outcome.detail.startswith(("thermal", "battery")))


def tier_figures(results: list[TaskResult]) -> dict[str, Any]:
    invited, ok, excused, offline = Counter(), Counter(), Counter(), Counter()
    micro: dict[str, list[int]] = defaultdict(list)
    eff: dict[str, list[int]] = defaultdict(list)
    for r in results:
        invited[r.tier] += 1
        ok[r.tier] += r.ok
        excused[r.tier] += _declined_for_battery_or_heat(r)
        offline[r.tier] += isinstance(r.outcome, Failure) and r.outcome.cause is FailureCause.OFFLINE
        if r.ok:
            micro[r.tier].append(r.plan.micro_batch)
            eff[r.tier].append(r.plan.effective_batch)
    return {t: {"invited": invited[t], "updates": ok[t], "excused": excused[t], "offline": offline[t],
                "mean_micro": sum(micro[t]) / len(micro[t]) if micro[t] else 0.0,
                "mean_effective": sum(eff[t]) / len(eff[t]) if eff[t] else 0.0} for t in sorted(invited)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--config", default="examples/photo_app.yaml")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--strategies", nargs="+", default=["fixed32", "dynamic"])
    args = p.parse_args()
    base = with_overrides(load_config(args.config), {"orchestration.rounds": args.rounds, "output.progress": False})
    rows = {}
    for name in args.strategies:
        t0 = time.perf_counter()
        summary, results = run_strategy(apply_strategy(base, name))
        rows[name] = (summary, tier_figures(results), time.perf_counter() - t0)
    print(f"photo_app fleet, seed {base.seed}, {args.rounds} rounds, target {base.evaluation.target_accuracy:.2f}")
    for name, (s, tiers, wall) in rows.items():
        ttt = s["time_to_target_s"]
        print(f"\n== {name}  (wall {wall:.0f} s)")
        print(f"  out-of-memory failures: {s['failures_by_cause'].get('out_of_memory', 0)}   "
              f"all failures: {s['failures_by_cause']}")
        print(f"  time to target: {'not reached' if ttt is None else f'{ttt:.1f} s'}   "
              f"final accuracy: {s['final_accuracy']:.4f}   virtual time: {s['virtual_time_s']:.1f} s")
        print(f"  {'tier':16} {'invited':>7} {'updates':>7} {'part.':>6} {'excused':>7} {'offline':>7} "
              f"{'part. ex.':>9} {'part. ex.+off':>13} {'micro':>6} {'eff.':>6}")
        for t, f in tiers.items():
            fair = f["invited"] - f["excused"]
            reach = fair - f["offline"]
            print(f"  {t:16} {f['invited']:7d} {f['updates']:7d} {f['updates'] / f['invited']:6.0%} "
                  f"{f['excused']:7d} {f['offline']:7d} {f['updates'] / max(fair, 1):9.0%} "
                  f"{f['updates'] / max(reach, 1):13.0%} {f['mean_micro']:6.1f} {f['mean_effective']:6.1f}")
    (first, (s0, _, _)), *others = rows.items()
    for name, (s, _, _) in others:
        if s0["time_to_target_s"] and s["time_to_target_s"]:
            print(f"time-to-target speed-up of {name} over {first}: "
                  f"{s0['time_to_target_s'] / s['time_to_target_s']:.2f}x")


if __name__ == "__main__":
    main()
