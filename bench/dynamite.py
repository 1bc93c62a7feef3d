"""DYNAMITE vs fixed (b, τ), dynamic batching and the untuned default, on two data sets and three seeds.

For each data set, seed and strategy one run trains on the virtual clock until the budget is
spent and prints: virtual seconds and fleet joules to the target accuracy ("-": not reached
within the budget), the accuracy at the budget, and the last (τ, b_i) DYNAMITE planned. The
offline-optimal reference is the grid point with the least time to target on the same fleet
and seed; the summary compares online DYNAMITE with it and with batch 32 / one local epoch.
The streaming variant (``--stream``) adds data arriving over time (examples/dynamite_stream.yaml):
it runs every fixed setting the example declares (all its ``grid-*`` points and batch 32 / one
epoch), prints each run's mean buffer size, trained-data age (seconds since the samples a
task trained on arrived, averaged over the tasks that returned an update) and rounds aggregated within the budget, and whether online
DYNAMITE's accuracy at the budget is above every fixed setting's.

    PYTHONPATH=src python bench/dynamite.py [--seeds 0 1 2] [--datasets digits fashion_mnist] [--stream]
        [--budget-s 30] [--strategies dynamite-online ...] [--uncalibrated] [--set KEY=VALUE ...]
        [--config bench/dynamite_fleet_wearables.yaml]

``--uncalibrated`` runs DYNAMITE with the drift term's factor fixed at 1 (the bound as derived,
``dynamite.drift_calibration.enabled: false``); ``--strategies`` runs a subset (the summary
line needs ``dynamite-online``, ``batch32-epoch1`` and the grid points); ``--set`` overrides config
keys for every run (YAML values, e.g. ``--set dynamite.drift_calibration.prior=1``); ``--config``
runs another fleet's config (default examples/dynamite.yaml, or examples/dynamite_stream.yaml with
``--stream``; it must declare the grid strategies, as bench/dynamite_fleet_*.yaml do).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

import yaml

from fedfit.config import ExperimentConfig, load_config, with_overrides
from fedfit.experiment import built
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.strategies import apply_strategy

GRID = ["grid-b8-t50", "grid-b32-t5", "grid-b32-t20", "grid-b32-t50", "grid-b128-t50"]
STRATEGIES = ["batch32-epoch1", "dynamic", "dynamite-closed", "dynamite-hetero", "dynamite-online", *GRID]
DATASETS: dict[str, dict[str, Any]] = {
    "digits": {"evaluation.target_accuracy": 0.80},
    "fashion_mnist": {"data.dataset": "fashion_mnist", "data.max_train_samples": 1600,
                      "data.max_test_samples": 500, "evaluation.target_accuracy": 0.65},
}


@dataclass(frozen=True)
class Outcome:
    time_to_target_s: float | None
    energy_to_target_j: float | None
    accuracy_at_budget: float
    plan: str
    wall_s: float
    buffer: float | None = None
    age_s: float | None = None
    rounds: int = 0


def run_to_budget(config: ExperimentConfig, budget_s: float) -> Outcome:
    """Train until the virtual clock passes ``budget_s``; first crossing of the target, last accuracy."""
    start, energy, hit, accuracy = time.perf_counter(), 0.0, None, 0.0
    held: list[tuple[int, float]] = []  # (buffer size, mean data age) of every task that trained
    plan = ""  # the last (τ, b_i) a round within the budget ran with
    rounds = 0  # aggregations within the budget
    with built(config) as exp:
        planner = exp.orchestrator.observer
        for outcome in exp.orchestrator.rounds(exp.initial_params):
            r = outcome.report
            energy += r.energy_j
            if r.virtual_time_s > budget_s:
                break
            rounds += 1
            if isinstance(planner, DynamitePlanner) and planner.history:
                _, tau, batches = planner.history[-1]
                plan = f"τ={tau} b={min(batches)}..{max(batches)}"
            if exp.stream is not None:
                buffers = [(exp.stream.buffer(t.plan.device_id, t.start_s), t.start_s) for t in outcome.results if t.ok]
                held += [(len(b), b.mean_age_s(at)) for b, at in buffers]
            accuracy = r.accuracy if r.accuracy is not None else accuracy
            if hit is None and accuracy >= config.evaluation.target_accuracy:
                hit = (r.virtual_time_s, energy)
    return Outcome(hit[0] if hit else None, hit[1] if hit else None, accuracy, plan,
                   time.perf_counter() - start, _mean([n for n, _ in held]), _mean([a for _, a in held]), rounds)


def _mean(xs: list[float] | list[int]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _fmt(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--budget-s", type=float, default=30.0, help="virtual seconds per run")
    parser.add_argument("--stream", action="store_true", help="the streaming variant")
    parser.add_argument("--strategies", nargs="+", default=None)
    parser.add_argument("--uncalibrated", action="store_true", help="DYNAMITE's drift factor fixed at 1")
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", help="config overrides (YAML values)")
    parser.add_argument("--config", default=None, help="the config to run (default: the example)")
    args = parser.parse_args()
    path = args.config or ("examples/dynamite_stream.yaml" if args.stream else "examples/dynamite.yaml")
    base = load_config(path)
    names = args.strategies or (stream_strategies(base) if args.stream else STRATEGIES)
    for dataset in args.datasets:
        for seed in args.seeds:
            config = with_overrides(base, {**DATASETS[dataset], "seed": seed, "orchestration.rounds": 1000,
                                           "dynamite.budget_time_s": args.budget_s,
                                           "dynamite.drift_calibration.enabled": not args.uncalibrated,
                                           **_overrides(args.set)})
            rows = {name: run_to_budget(apply_strategy(config, name), args.budget_s) for name in names}
            (report_stream if args.stream else report)(dataset, seed, rows)


def _overrides(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as config overrides, each value parsed as YAML."""
    return {k: yaml.safe_load(v) for k, _, v in (p.partition("=") for p in pairs)}


def stream_strategies(base: ExperimentConfig) -> list[str]:
    """The DYNAMITE variants, dynamic batching and every fixed setting the streaming example declares."""
    return [*STRATEGIES[:5], *sorted((n for n in base.strategies if n.startswith("grid-")), key=_grid_order)]


def _grid_order(name: str) -> tuple[int, int]:
    b, t = name.removeprefix("grid-b").split("-t")
    return int(b), int(t)


def report_stream(dataset: str, seed: int, rows: dict[str, Outcome]) -> None:
    print(f"\n{dataset} seed {seed} (stream): strategy, accuracy at budget, mean buffer, mean data age s, rounds, plan, wall s")
    for name, o in rows.items():
        print(f"  {name:18s} {o.accuracy_at_budget:6.3f} {_fmt(o.buffer):>6s} {_fmt(o.age_s):>6s} {o.rounds:3d}  {o.plan:22s} "
              f"{o.wall_s:5.1f}", flush=True)
    fixed = {n: o.accuracy_at_budget for n, o in rows.items() if n.startswith("grid-") or n == "batch32-epoch1"}
    if not fixed or "dynamite-online" not in rows:
        return
    best = max(fixed, key=lambda n: fixed[n])
    online = rows["dynamite-online"].accuracy_at_budget
    verdict = "above" if online > fixed[best] else "tied with" if online == fixed[best] else "below"
    print(f"  online {online:.3f} is {verdict} the best fixed setting, {best} {fixed[best]:.3f} "
          f"({len(fixed)} fixed settings)", flush=True)


def report(dataset: str, seed: int, rows: dict[str, Outcome]) -> None:
    print(f"\n{dataset} seed {seed}: strategy, s to target, J to target, accuracy at budget, plan, wall s")
    for name, o in rows.items():
        print(f"  {name:18s} {_fmt(o.time_to_target_s):>7s} {_fmt(o.energy_to_target_j):>8s} "
              f"{o.accuracy_at_budget:6.3f}  {o.plan:22s} {o.wall_s:5.1f}", flush=True)
    if not {"dynamite-online", "batch32-epoch1", *GRID} <= rows.keys():
        return
    reached = {n: o for n, o in rows.items() if n in GRID and o.time_to_target_s is not None}
    best = min(reached, key=lambda n: reached[n].time_to_target_s or 0.0) if reached else None
    online, default = rows["dynamite-online"], rows["batch32-epoch1"]
    print(f"  offline optimum (grid): {best or '-'}; online/optimum time: "
          f"{_ratio(online.time_to_target_s, reached[best].time_to_target_s if best else None)}; "
          f"online/batch32-epoch1 time: {_ratio(online.time_to_target_s, default.time_to_target_s)}, "
          f"energy: {_ratio(online.energy_to_target_j, default.energy_to_target_j)}; "
          f"best fixed accuracy at budget: {max(o.accuracy_at_budget for n, o in rows.items() if n in GRID):.3f}",
          flush=True)


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else f"{a / b:.2f}"


if __name__ == "__main__":
    main()
