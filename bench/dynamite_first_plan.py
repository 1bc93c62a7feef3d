"""What online DYNAMITE's first plan costs: the run re-made with the first round's own σ² as the prior.

The first plan is made before any update, from ``dynamite.prior`` (σ² = 1 by default). For each
run this reads σ̂² after the first aggregation (the pooled σ² probes at the initial model), then
re-runs online DYNAMITE with ``dynamite.prior.sigma2`` set to it: an oracle for a plan made after
a probe of the initial model, at no cost for that probe. Prints, per run, that σ̂² and the
virtual seconds and fleet joules to the target ("-": not reached within the budget) with the
default prior and with the oracle one (issue 14, dyn14m). Same fleets as ``bench/dynamite.py``::

    PYTHONPATH=src:bench python bench/dynamite_first_plan.py --datasets digits fashion_mnist --seeds 0 1 [--budget-s 30] [--jobs 2]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from multiprocessing import Pool

from fedfit.config import ExperimentConfig, load_config, with_overrides
from fedfit.experiment import built
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.strategies import apply_strategy

from dynamite import DATASETS


def online(dataset: str, seed: int, budget_s: float, sigma2: float | None = None) -> ExperimentConfig:
    """The bench's online DYNAMITE run, with the prior's σ² replaced where given."""
    overrides = {**DATASETS[dataset], "seed": seed, "orchestration.rounds": 1000, "dynamite.budget_time_s": budget_s}
    if sigma2 is not None:
        overrides["dynamite.prior.sigma2"] = sigma2
    return apply_strategy(with_overrides(load_config("examples/dynamite.yaml"), overrides), "dynamite-online")


def first_sigma2(config: ExperimentConfig) -> float | None:
    """σ̂² after the first aggregation."""
    with built(config) as exp:
        for _ in exp.orchestrator.rounds(exp.initial_params):
            planner = exp.orchestrator.observer
            return planner.estimator.sigma2 if isinstance(planner, DynamitePlanner) else None
    return None


def to_target(config: ExperimentConfig, budget_s: float, start_s: float = 0.0, start_j: float = 0.0,
              precise: bool = False) -> str:
    """Virtual seconds and fleet joules to the target, or "-"; the run starts at ``start_s`` with
    ``start_j`` already spent (the planner told so; both 0: an ordinary run)."""
    energy = start_j
    with built(config) as exp:
        planner = exp.orchestrator.observer
        if isinstance(planner, DynamitePlanner):
            planner.spent_s, planner.spent_j = max(planner.spent_s, start_s), planner.spent_j + start_j
        for outcome in exp.orchestrator.rounds(exp.initial_params, start_s=start_s):
            r = outcome.report
            energy += r.energy_j
            if r.virtual_time_s > budget_s:
                break
            if (r.accuracy or 0.0) >= config.evaluation.target_accuracy:
                return f"{r.virtual_time_s:7.3f} s {energy:7.2f} J" if precise else f"{r.virtual_time_s:6.2f} s {energy:6.1f} J"
    return "          -          " if precise else "        -        "

def one(job: tuple[str, int, float]) -> str:
    dataset, seed, budget_s = job
    sigma2 = first_sigma2(online(dataset, seed, budget_s))
    oracle = "-" if sigma2 is None else to_target(online(dataset, seed, budget_s, sigma2), budget_s)
    return (f"{dataset:13s} {seed:3d}  first σ̂² {sigma2 or 0.0:7.2f}  prior: {to_target(online(dataset, seed, budget_s), budget_s)}"
            f"  first σ̂² as prior: {oracle}")


def run_jobs(one: Callable[[tuple[str, int, float]], str], description: str) -> None:
    """Parse ``--datasets --seeds --budget-s --jobs`` and print ``one`` of every (data set, seed,
    budget) as it finishes, in order (also ``bench/dynamite_first_probe_priced.py``'s command line)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--datasets", nargs="+", default=["digits"], choices=list(DATASETS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget-s", type=float, default=30.0)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    jobs = [(d, s, args.budget_s) for d in args.datasets for s in args.seeds]
    with Pool(args.jobs) as pool:
        for line in pool.imap(one, jobs):
            print(line, flush=True)


def main() -> None:
    run_jobs(one, __doc__.splitlines()[0])

if __name__ == "__main__":
    main()
