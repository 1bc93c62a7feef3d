"""Fixed batch 32 vs dynamic batching on the photo-app phone fleet, same seed, one process.

Prints, per strategy: out-of-memory failures, per tier invitations, updates, participation
(updates / *all* invitations: a declined or offline invitation is one the tier did not take
part in), declines and offline failures beside it, mean micro-batch and effective batch, virtual
time to the target accuracy and final accuracy. With ``--tuned`` it also runs ``fedavg-tuned``
(plain FedAvg over :mod:`fedfit.tuning`'s grid, batch {8, 16, 32} × deadline {none, p50, p90} ×
over-selection {0, 0.3}, same fleet, seed and rounds; each point stops once it reaches the target,
which cannot change its time to it) and states every speed-up against its chosen point too.

    PYTHONPATH=src python bench/dynamic_batching.py [--rounds N] [--config examples/photo_app.yaml] [--tuned]
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
from fedfit.tuning import GridResult, choose, grid, predicted_times, result_of
from fedfit.types import Failure, FailureCause, TaskResult

WEAKEST = "older_phone"


def run_strategy(config: Any, stop_at: float | None = None) -> tuple[dict[str, Any], list[TaskResult]]:
    reports, results = [], []
    with built(config) as exp:
        params = exp.initial_params
        for outcome in exp.orchestrator.rounds(params):
            reports.append(outcome.report)
            results.extend(outcome.results)
            params = outcome.params
            if stop_at is not None and (outcome.report.accuracy or 0.0) >= stop_at:
                break
    tiers = [exp.fleet.profile(d).tier for d in exp.fleet.device_ids()]
    return summarise(reports, config.evaluation.target_accuracy, tiers=tiers), results


def tier_figures(results: list[TaskResult]) -> dict[str, Any]:
    invited, ok, declined, offline = Counter(), Counter(), Counter(), Counter()
    micro: dict[str, list[int]] = defaultdict(list)
    eff: dict[str, list[int]] = defaultdict(list)
    for r in results:
        invited[r.tier] += 1
        ok[r.tier] += r.ok
        declined[r.tier] += isinstance(r.outcome, Failure) and r.outcome.cause is FailureCause.DECLINED
        offline[r.tier] += isinstance(r.outcome, Failure) and r.outcome.cause is FailureCause.OFFLINE
        if r.ok:
            micro[r.tier].append(r.plan.micro_batch)
            eff[r.tier].append(r.plan.effective_batch)
    return {t: {"invited": invited[t], "updates": ok[t], "declined": declined[t], "offline": offline[t],
                "mean_micro": sum(micro[t]) / len(micro[t]) if micro[t] else 0.0,
                "mean_effective": sum(eff[t]) / len(eff[t]) if eff[t] else 0.0} for t in sorted(invited)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--config", default="examples/photo_app.yaml")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--strategies", nargs="+", default=["fixed32", "dynamic"])
    p.add_argument("--tuned", action="store_true", help="also run fedavg-tuned's grid and compare against it")
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
        print(f"  {'tier':16} {'invited':>7} {'updates':>7} {'part.':>6} {'declined':>8} {'offline':>7} "
              f"{'micro':>6} {'eff.':>6}")
        for t, f in tiers.items():
            print(f"  {t:16} {f['invited']:7d} {f['updates']:7d} {f['updates'] / f['invited']:6.0%} "
                  f"{f['declined']:8d} {f['offline']:7d} {f['mean_micro']:6.1f} {f['mean_effective']:6.1f}")
        if s["never_invited"]:
            print(f"  never invited: {', '.join(s['never_invited'])}")
    (first, (s0, _, _)), *others = rows.items()
    for name, (s, _, _) in others:
        if s0["time_to_target_s"] and s["time_to_target_s"]:
            print(f"time-to-target speed-up of {name} over {first}: "
                  f"{s0['time_to_target_s'] / s['time_to_target_s']:.2f}x")
    if args.tuned:
        compare_tuned(base, {name: s for name, (s, _, _) in rows.items()})


def compare_tuned(base: Any, summaries: dict[str, dict[str, Any]]) -> None:
    """Run fedavg-tuned's grid and print each strategy's speed-up over its chosen point."""
    target = base.evaluation.target_accuracy
    results: list[GridResult] = []
    print("\n== fedavg-tuned grid (batch, deadline, over-selection: time to target / final accuracy)")
    for point in grid(predicted_times(base)):
        summary, _ = run_strategy(with_overrides(base, point.overrides()), stop_at=target)
        results.append(result_of(point, summary))
        ttt = summary["time_to_target_s"]
        print(f"  b{point.batch} d{'-' if point.deadline_s is None else f'{point.deadline_s:.2f}'} "
              f"o{point.over_selection:g}: {'not reached' if ttt is None else f'{ttt:.1f} s'} / "
              f"{summary['final_accuracy'] or 0.0:.4f}")
    chosen = choose(results)
    p, tuned = chosen.point, chosen.time_to_target_s
    print(f"fedavg-tuned chose b{p.batch}, deadline {p.deadline_s}, over-selection {p.over_selection}: "
          f"{'not reached' if tuned is None else f'{tuned:.1f} s'}")
    for name, s in summaries.items():
        if tuned and s["time_to_target_s"]:
            print(f"time-to-target speed-up of {name} over fedavg-tuned: {tuned / s['time_to_target_s']:.2f}x")


if __name__ == "__main__":
    main()
