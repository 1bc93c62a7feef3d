"""One online DYNAMITE streaming run, round by round: the plan (τ, b_i) each round ran with, the
estimates after it and the slowest task durations (diagnostics for bench/RESULTS.md).

    PYTHONPATH=src python bench/dynamite_stream_trace.py --dataset digits --seed 1 [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from dynamite import DATASETS, _overrides  # noqa: E402  (the bench's data sets and --set parsing)

from fedfit.config import load_config, with_overrides  # noqa: E402
from fedfit.experiment import built  # noqa: E402
from fedfit.policy.dynamite.planner import DynamitePlanner  # noqa: E402
from fedfit.strategies import apply_strategy  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="digits", choices=list(DATASETS))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--budget-s", type=float, default=30.0)
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    config = with_overrides(load_config("examples/dynamite_stream.yaml"), {
        **DATASETS[args.dataset], "seed": args.seed, "orchestration.rounds": 1000,
        "dynamite.budget_time_s": args.budget_s, **_overrides(args.set)})
    with built(apply_strategy(config, "dynamite-online")) as exp:
        planner = exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner)
        for outcome in exp.orchestrator.rounds(exp.initial_params):
            r = outcome.report
            if r.virtual_time_s > args.budget_s:
                break
            _, tau, batches = planner.history[-1]
            est = planner.estimates()
            slowest = sorted(round(t.finish_s - t.start_s, 2) for t in outcome.results if t.ok)[-3:]
            print(f"t={r.virtual_time_s:5.1f} s accuracy {r.accuracy or 0.0:.3f} τ={tau} b={list(batches)} "
                  f"σ²={est.sigma2:.1f} F0={est.loss:.2f} slowest tasks {slowest} s", flush=True)


if __name__ == "__main__":
    main()
