"""Online DYNAMITE under each probe schedule (``dynamite.probe``, issue 14, dyn14n), side by side.

For each run (the fleets of ``bench/dynamite.py``) and each schedule prints the virtual seconds
and fleet joules to the target ("-": not reached within the budget), the rounds whose tasks
carried any probe and the tasks that probed, out of those run to the target::

    PYTHONPATH=src:bench python bench/dynamite_probe_schedule.py --datasets digits fashion_mnist --seeds 0 1
        [--budget-s 30] [--jobs 2] [--schedules every_round until_settled sampled]
"""

from __future__ import annotations

import argparse
from multiprocessing import Pool

from fedfit.config import ExperimentConfig, load_config, with_overrides
from fedfit.experiment import built
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.strategies import apply_strategy

from dynamite import DATASETS


def online(dataset: str, seed: int, budget_s: float, schedule: str) -> ExperimentConfig:
    """The bench's online DYNAMITE run with the probe schedule given."""
    overrides = {**DATASETS[dataset], "seed": seed, "orchestration.rounds": 1000, "dynamite.budget_time_s": budget_s,
                 "dynamite.probe": schedule}
    return apply_strategy(with_overrides(load_config("examples/dynamite.yaml"), overrides), "dynamite-online")


def to_target(config: ExperimentConfig, budget_s: float) -> str:
    """Virtual seconds and fleet joules to the target, or "-"; rounds that probed / rounds run."""
    energy, probed, rounds, hit, tasks, probing = 0.0, 0, 0, None, 0, 0
    with built(config) as exp:
        for outcome in exp.orchestrator.rounds(exp.initial_params):
            r = outcome.report
            energy += r.energy_j
            if r.virtual_time_s > budget_s:
                break
            rounds += 1
            probed += any(t.plan.sigma_probe for t in outcome.results)
            tasks, probing = tasks + len(outcome.results), probing + sum(t.plan.sigma_probe for t in outcome.results)
            if hit is None and (r.accuracy or 0.0) >= config.evaluation.target_accuracy:
                hit = f"{r.virtual_time_s:6.2f} s {energy:6.1f} J"
                if isinstance(exp.orchestrator.observer, DynamitePlanner):
                    break
    return f"{hit or '        -        '} (rounds {probed}/{rounds}, tasks {probing}/{tasks})"


def one(job: tuple[str, int, float, tuple[str, ...]]) -> str:
    dataset, seed, budget_s, schedules = job
    return f"{dataset:13s} {seed:3d}" + "".join(
        f"  {s}: {to_target(online(dataset, seed, budget_s, s), budget_s)}" for s in schedules)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["digits"], choices=list(DATASETS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget-s", type=float, default=30.0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--schedules", nargs="+", default=["every_round", "until_settled", "sampled"])
    args = parser.parse_args()
    jobs = [(d, s, args.budget_s, tuple(args.schedules)) for d in args.datasets for s in args.seeds]
    with Pool(args.jobs) as pool:
        for line in pool.imap(one, jobs):
            print(line, flush=True)


if __name__ == "__main__":
    main()
