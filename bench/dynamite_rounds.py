"""Round by round: what online DYNAMITE planned against a fixed grid point, on one bench run.

For each round within the budget: its end on the virtual clock, the accuracy after it, the plan
it ran (τ, the least and largest b_i) and the curvature along the noise the plan was priced with
(β̂_σ) against the latest round's pooled probe. Same fleets and overrides as ``bench/dynamite.py``::

    PYTHONPATH=src:bench python bench/dynamite_rounds.py --dataset digits --seed 7 [--grid grid-b8-t50] [--set K=V ...]
"""

from __future__ import annotations

import argparse

from fedfit.config import ExperimentConfig, load_config, with_overrides
from fedfit.experiment import built
from fedfit.policy.dynamite.estimate import EstimatorState, probed_noise_curvature
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.strategies import apply_strategy

from dynamite import DATASETS, _overrides


def trace(config: ExperimentConfig, budget_s: float) -> None:
    """Print one line per round until the budget passes or the target is reached."""
    with built(config) as exp:
        planner = exp.orchestrator.observer
        for k, outcome in enumerate(exp.orchestrator.rounds(exp.initial_params), start=1):
            r = outcome.report
            if r.virtual_time_s > budget_s:
                break
            line = f"  round {k:2d}  end {r.virtual_time_s:6.2f} s  acc {r.accuracy or 0.0:.3f}"
            if isinstance(planner, DynamitePlanner) and planner.history:
                _, tau, b = planner.history[-1]
                est = planner.estimator
                line += (f"  τ={tau} b={min(b)}..{max(b)}  β̂={_f(est.beta)}  σ̂²={_f(est.sigma2)}  β̂_σ={_f(est.noise_curvature)}"
                         f"  probe={_f(_probe(est))}")
            print(line, flush=True)
            if (r.accuracy or 0.0) >= config.evaluation.target_accuracy:
                break


def _probe(est: EstimatorState) -> float | None:
    return None if est.last is None else probed_noise_curvature(est.last)


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="digits", choices=list(DATASETS))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--budget-s", type=float, default=30.0)
    parser.add_argument("--grid", nargs="*", default=["grid-b8-t50"])
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    config = with_overrides(load_config("examples/dynamite.yaml"),
                            {**DATASETS[args.dataset], "seed": args.seed, "orchestration.rounds": 1000,
                             "dynamite.budget_time_s": args.budget_s, **_overrides(args.set)})
    for name in ["dynamite-online", *args.grid]:
        print(f"{args.dataset} seed {args.seed}: {name}")
        trace(apply_strategy(config, name), args.budget_s)


if __name__ == "__main__":
    main()
